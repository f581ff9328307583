// Loads an ONNX model with the protobuf library only: no checker, no shape inference, so models with
// IR versions and opsets newer than Debian's libonnx still load. Every problem is an mpa::Error whose
// message names the file and the node or tensor.
#pragma once
#include <filesystem>
#include <string>

#include "model/graph.h"

namespace onnx {
class TensorProto;
}

namespace mpa {

// Limits that keep hostile files from exhausting memory before any check can run.
struct LoadLimits {
  uint64_t max_file_bytes = uint64_t{4} << 30;
  int max_subgraph_depth = 64;
};

Model load_model(const std::filesystem::path& path, const LoadLimits& limits = {});
Model load_model_from_bytes(const std::string& bytes, const std::filesystem::path& base_dir,
                            const std::string& display_name, const LoadLimits& limits = {});

// Decodes a TensorProto (raw_data, typed fields or external data resolved under base_dir only).
// `what` names the tensor in error messages.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir, const std::string& what);
// The same, taking over the proto's raw_data (no copy of the bytes) when it has them.
Tensor tensor_from_proto(onnx::TensorProto&& proto, const std::filesystem::path& base_dir, const std::string& what);
// Reads a serialized TensorProto file (.pb), as in ONNX test data sets.
Tensor load_tensor_pb(const std::filesystem::path& path, std::string* name = nullptr);

// Reads a whole file, failing with a clear message (missing, unreadable, larger than max_bytes).
std::string read_file_bytes(const std::filesystem::path& path, uint64_t max_bytes);
// The size of a file whose size can be read (not a pipe or device) and is within max_bytes, or a one-line
// error naming the file.
uintmax_t checked_file_size(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace mpa
