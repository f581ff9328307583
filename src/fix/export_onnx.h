// `mpaudit fix --export-onnx`: the original model file rewritten as a real mixed-precision model, nodes of
// the FP32 set as they were and every other node computing in FP16 (or BF16):
//   - the float32 values such a node computes become the target type; Cast nodes sit at every island border
//     (a value stored in one format and read by a node of the other), one per value and direction, named
//     "<value>_to_fp16" / "<value>_to_fp32";
//   - float32 initializers read only by target-format nodes are converted in place; one read by both gets a
//     converted copy "<name>_fp16"; Constant, ConstantOfShape, Cast and the dtype attributes of EyeLike /
//     Random* / Bernoulli follow their node;
//   - graph inputs and outputs keep float32 unless keep_io_types is false (then they become the target type);
//   - unnamed nodes get the names mpaudit reports ("<op_type>_<index>"), so keep-lists name the same nodes.
// Nothing is clamped or flushed silently: an initializer or Constant value that would overflow the target
// or flush a nonzero element to zero stays float32, and the nodes reading it are exported in FP32. Nodes
// with subgraphs (If/Loop/Scan; their bodies untouched), ops of other domains, and ops whose schema fixes
// float32 ((De)QuantizeLinear, NonMaxSuppression, TfIdfVectorizer) are exported in FP32 too; each such node
// is listed with its reason. Initializers held as external data are written inline (the exported model is
// one file, so under protobuf's 2 GB).
#pragma once
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tensor/formats.h"

namespace mpa::fix {

struct ExportOptions {
  Format target = Format::FP16;  // FP16 or BF16; others are refused
  bool keep_io_types = true;
};

struct InitializerKeptFp32 {
  std::string name;
  std::string reason;    // "overflow" or "underflow"
  int64_t elements = 0;  // those that would overflow, or nonzero elements that would flush to zero
  std::vector<std::string> consumers;
};

struct NodeKeptFp32 {
  std::string node, op_type, reason;
};

struct ExportResult {
  int64_t casts_inserted = 0;
  int64_t initializers_converted = 0;              // converted in place or as a copy
  int64_t nodes_in_target = 0, nodes_in_fp32 = 0;  // top-level nodes
  std::vector<InitializerKeptFp32> initializers_kept_fp32;
  std::vector<NodeKeptFp32> nodes_kept_fp32;  // beyond the requested set, and why
};

// The exported model's bytes in `bytes`, made from the model file `model`: `fp32_nodes` (top-level node names as
// mpaudit reports them) stay FP32. `float32_values` names every float32 value of the top-level graph that is not an
// initializer (graph inputs and node outputs, as a reference run saw them). Fails (mpa::Error) naming the node where a
// node cannot be exported, and on a target other than FP16 or BF16.
ExportResult export_mixed_precision(const std::filesystem::path& model, const std::set<std::string>& fp32_nodes,
                                    const std::set<std::string>& float32_values, const ExportOptions& options,
                                    std::string* bytes);

}  // namespace mpa::fix
