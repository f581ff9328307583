// The operator interface. One op = one file under src/ops/ with one registration line:
//
//   class ReluOp : public OpKernel { ... };
//   MPA_OP_TRAITS("", "Relu", {.rounding_commutes = true});  // facts about the op (OpTraits), once per op
//   MPA_REGISTER_OP("", "Relu", ReluOp, 6, 13, 14);   // domain, op type, class, every since-version
//
// MPA_REGISTER_OP registers the CPU backend's kernel; a device backend registers its own kernel of the same
// op with MPA_REGISTER_KERNEL(backend, ...), sharing the op's attribute and shape code (ops/<op>.h).
//
// The since-versions are those at which the ONNX spec of the op changed; a model importing opset N gets
// the kernel registered under the largest since-version <= N, and the kernel reads init.opset() when
// behaviour differs between versions. A kernel reads its attributes once in its constructor and its
// compute() is const and stateless, so one kernel instance can run concurrently.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "model/graph.h"
#include "tensor/dispatch.h"
#include "tensor/formats.h"
#include "tensor/tensor.h"
#include "tensor/value.h"

namespace mpa {

// What a kernel's constructor sees: the node, its opset, typed attribute getters.
class OpInit {
 public:
  OpInit(const Node& node, int64_t opset) : node_(node), opset_(opset) {}
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  bool has(const std::string& key) const { return node_.attribute(key) != nullptr; }
  int64_t get_int(const std::string& key, int64_t fallback) const;
  float get_float(const std::string& key, float fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> get_floats(const std::string& key, std::vector<float> fallback = {}) const;
  // Required attributes: fail with a message naming the node when absent.
  int64_t require_int(const std::string& key) const;
  const Tensor& require_tensor(const std::string& key) const;
  const Attribute& require(const std::string& key) const;

 private:
  const Attribute* typed(const std::string& key, Attribute::Kind kind) const;
  const Node& node_;
  int64_t opset_;
};

// How GEMM-like ops (MatMul, Gemm, Conv, ConvTranspose) accumulate: cuBLAS CUBLAS_COMPUTE_32F (the
// default of ONNX Runtime and PyTorch) or CUBLAS_COMPUTE_16F, emulated by rounding partial sums.
enum class Accumulation : uint8_t { FP32, FP16 };
// Which GPU runtime's op math to reproduce (docs/numerics.md): `Generic` = float op math, one rounding per
// op (PyTorch); `OrtCuda` = ONNX Runtime CUDA EP's documented deviations.
enum class RuntimeProfile : uint8_t { Generic, OrtCuda };

// Settings every kernel may read. `storage` is the format the node's float outputs are stored in (the
// executor rounds them after compute); kernels read it only for the few places a GPU runtime rounds
// inside an op (profile rules, fp16 accumulation).
struct ExecConfig {
  int threads = 1;
  Format storage = Format::FP32;
  Accumulation accumulation = Accumulation::FP32;
  bool tf32_gemm_inputs = false;  // round FP32 GEMM/Conv operands to TF32 (Ampere+ default for convolutions)
  RuntimeProfile profile = RuntimeProfile::Generic;
};

// The format the values of a float tensor of element type `dtype` lie on under `config`: a 16-bit float
// tensor its own format, float32 the storage format the executor rounds float outputs to, float64 FP64.
inline Format value_format(const ExecConfig& config, DType dtype) {
  switch (dtype) {
    case DType::Float16: return Format::FP16;
    case DType::BFloat16: return Format::BF16;
    case DType::Float64: return Format::FP64;
    default: return config.storage;
  }
}

// Whether the ONNX Runtime CUDA EP rules (docs/numerics.md, "Op math per class") apply to an op computing
// on `dtype`: profile ort-cuda and the op's values in fp16. Each rule is a small named function in its op.
inline bool ort_cuda_fp16_rules(const ExecConfig& config, DType dtype) {
  return config.profile == RuntimeProfile::OrtCuda && value_format(config, dtype) == Format::FP16;
}

// Values visible at a node by name (its graph's values and initializers, then the enclosing scopes'),
// for control-flow ops whose subgraphs read outer values (Node::implicit_inputs). nullptr when unknown.
using ScopeLookup = std::function<const Tensor*(const std::string&)>;

class Session;

// Watches the nodes that control-flow ops (If, Loop, Scan) run inside their subgraphs, so that the audit's
// probes see every node of every branch and iteration. The executor calls it; kernels only pass it on.
class SubgraphObserver {
 public:
  virtual ~SubgraphObserver() = default;
  // A run of the subgraph in `owner`'s graph attribute `attribute` begins; `iteration` numbers the runs of
  // one loop (0 for If). Runs nest: every enter() is matched by a leave().
  virtual void enter(const Node& owner, const std::string& attribute, int64_t iteration) = 0;
  virtual void leave() = 0;
  // Node `index` of the running subgraph's `session` ran on `inputs` (nullptr: omitted) under `config` and
  // produced `outputs` (nullptr: not named), already stored in the config's format. `scope` resolves
  // every name the node can see, for re-running it.
  virtual void node_done(const Session& session, size_t index, const std::vector<const Tensor*>& inputs,
                         const std::vector<const Tensor*>& outputs, const ExecConfig& config,
                         const ScopeLookup& scope) = 0;
};

// The executor's service to control-flow kernels (If, Loop, Scan), so that ops know no executor: runs one
// of their subgraphs. The executor sets it on the KernelContext of every node it runs.
class SubgraphExecutor {
 public:
  virtual ~SubgraphExecutor() = default;
  // Runs `graph` on `feeds` (its declared inputs by name) under `config`, reading outer values through
  // `scope` and showing its nodes to `observer` (either may be nullptr); returns its tensor outputs by name.
  // `values` (may be nullptr) gives the sequence/optional inputs and the enclosing scopes' such values by
  // name, and receives the sequence/optional outputs.
  virtual std::map<std::string, Tensor> run_subgraph(const std::shared_ptr<const Graph>& graph,
                                                     const std::map<std::string, Tensor>& feeds,
                                                     const ExecConfig& config, const ScopeLookup* scope,
                                                     SubgraphObserver* observer, ValueMap* values) const = 0;
};

// The sequence and optional values (tensor/value.h) a node reads and makes beside its tensors. The executor
// reuses one per stream and fills `inputs` and `scope` only for nodes that meet such a value, so tensor
// nodes never pay for them.
struct NodeValues {
  std::vector<ValuePtr> inputs;   // per input: its value where it is a sequence/optional; empty when none is
  std::vector<ValuePtr> outputs;  // per output, filled by KernelContext::set_value_output
  ValueMap scope;                 // such values of enclosing scopes the node's subgraphs read, by name
  void clear() {
    inputs.clear();
    outputs.clear();
    scope.clear();
  }
};

// A node that maps each float32 value of one input by the value's channel (dimension 1) and place alone —
// an activation, BatchNormalization with given statistics, a sum with a tensor of the output's shape or one
// value per channel — run as the epilogue of the node that produces that input: applied in place to each
// block of the producer's output just after the producer wrote it, while the block is in cache, instead of
// in a pass of its own over the whole tensor. It computes what the node computes, with the node's own
// functors, so that the values are bit for bit those of the two nodes run one after the other.
class Epilogue {
 public:
  virtual ~Epilogue() = default;
  // values[0, n): the producer's output of channel `channel` at flat places [offset, offset + n).
  virtual void apply(float* values, int64_t n, int64_t channel, int64_t offset) const = 0;
};

// What the executor offers a kernel that takes epilogues (OpKernel::takes_epilogues).
class EpilogueSource {
 public:
  virtual ~EpilogueSource() = default;
  // The epilogues to run, in order, on a float32 output 0 of `shape` (asked once, when the kernel knows the
  // shape); the output's values are then those of the last one's node. None is asked for: the kernel's own.
  virtual const std::vector<const Epilogue*>& epilogues_for(const Shape& shape) = 0;
};

// What compute() sees: inputs (nullptr for omitted optional inputs), outputs to fill. Both vectors belong to
// the caller, which reuses them node after node, so running a node allocates no context; `outputs` is
// emptied and sized to the node's outputs here.
class KernelContext {
 public:
  KernelContext(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                const ExecConfig& config)
      : node_(node), inputs_(inputs), outputs_(outputs), config_(config) {
    outputs_.assign(node.outputs.size(), Tensor());
  }

  const Node& node() const { return node_; }
  const ExecConfig& config() const { return config_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor* optional_input(size_t i) const { return has_input(i) ? inputs_[i] : nullptr; }
  const Tensor& input(size_t i) const;  // fails with a message when missing or not a tensor
  size_t num_outputs() const { return outputs_.size(); }
  bool output_requested(size_t i) const;  // false when the node names no value for output i
  // Allocates output i (uninitialised) and returns it.
  Tensor& allocate_output(size_t i, DType dtype, Shape shape);
  // Sets output i to an existing tensor (aliases share storage, e.g. Reshape, Identity).
  void set_output(size_t i, Tensor tensor);
  std::vector<Tensor>& outputs() { return outputs_; }
  // The values the node's scope sees (set by the executor for nodes with subgraphs), or nullptr.
  const ScopeLookup* scope() const { return scope_; }
  void set_scope(const ScopeLookup* scope) { scope_ = scope; }
  // Who watches the nodes of the node's subgraphs (the audit), or nullptr.
  SubgraphObserver* observer() const { return observer_; }
  void set_observer(SubgraphObserver* observer) { observer_ = observer; }
  // Who runs the node's subgraphs (the executor), or nullptr outside one.
  const SubgraphExecutor* subgraphs() const { return subgraphs_; }
  void set_subgraphs(const SubgraphExecutor* subgraphs) { subgraphs_ = subgraphs; }
  // Input i where it is a sequence or optional (tensor/value.h), else nullptr (a tensor, or omitted).
  const ValuePtr& value_input(size_t i) const;
  // Sets output i to a sequence or optional value; fails outside an executor that takes them.
  void set_value_output(size_t i, ValuePtr value);
  // The node's sequence/optional values (set by the executor), or nullptr.
  NodeValues* values() const { return values_; }
  void set_values(NodeValues* values) { values_ = values; }
  // Where a kernel that takes epilogues finds them (set by the executor), or nullptr.
  EpilogueSource* epilogue_source() const { return epilogue_source_; }
  void set_epilogue_source(EpilogueSource* source) { epilogue_source_ = source; }

 private:
  const Node& node_;
  const std::vector<const Tensor*>& inputs_;
  std::vector<Tensor>& outputs_;
  const ExecConfig& config_;
  const ScopeLookup* scope_ = nullptr;
  SubgraphObserver* observer_ = nullptr;
  const SubgraphExecutor* subgraphs_ = nullptr;
  NodeValues* values_ = nullptr;
  EpilogueSource* epilogue_source_ = nullptr;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void compute(KernelContext& ctx) const = 0;
  // Whether compute() runs the epilogues of the context's source on a float32 output 0.
  virtual bool takes_epilogues() const { return false; }
  // The node as an epilogue (above) on its input `from`, of shape `shape` (float32, the producer's output, which
  // must be the node's output shape too), given its other inputs (`inputs[from]` is not read); nullptr where it
  // cannot be one with these inputs (the default).
  virtual std::unique_ptr<Epilogue> as_epilogue(size_t from, const std::vector<const Tensor*>& inputs,
                                                const Shape& shape) const {
    (void)from, (void)inputs, (void)shape;
    return nullptr;
  }
};

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const OpInit&)>;

// How an op's float outputs come to differ from exact math (docs/numerics.md, "Op classes"): the audit
// reports it per node, and GPU runtimes treat the classes differently.
enum class PrecisionClass : uint8_t {
  Exact,           // selects, moves, compares or counts values: no rounding of its own (Relu, Gather, Max, Equal)
  Elementwise,     // a few correctly rounded operations per element (Add, Div, Sqrt, Cast, Resize)
  Transcendental,  // a math-library function per element, not correctly rounded (Exp, Tanh, Erf, Pow)
  Accumulating,    // sums over many values (MatMul, Conv, ReduceSum, Softmax, normalisations, average pooling)
};
// Where an accumulating op's sums run: as the GEMM setting says (--accumulate: FP32 as cuBLAS
// CUBLAS_COMPUTE_32F, or FP16 emulated), or always in FP32 (reductions, softmax and normalisation rows,
// average pooling, as GPU runtimes run them), whatever format the values are stored in.
enum class SumsIn : uint8_t { None, GemmSetting, Fp32 };

// Facts about an ONNX op that hold whatever runs it, registered beside its kernel (MPA_OP_TRAITS) and asked
// for by the audit; every registered op has a record (`{}` for none of these).
struct OpTraits {
  // Every float output element is one of the float inputs' values (data movement, Relu, max pooling, Max,
  // Min, Abs, Neg, Where): rounding is monotone, odd-symmetric and fixes zero, so the op run on inputs
  // stored in a format gives exactly its reference output stored in that format. (Pad is not: its constant
  // may lie off the format's grid; nor are Resize and AveragePool, which compute new values in some modes.)
  bool rounding_commutes = false;
  // Its one output holds exactly the values of input 0, reshaped or reordered (Identity, Reshape, Flatten,
  // Squeeze, Unsqueeze, Transpose): figures that do not depend on order are input 0's.
  bool moves_values_only = false;
  PrecisionClass precision = PrecisionClass::Elementwise;
  SumsIn sums_in = SumsIn::None;  // for accumulating ops
  // Its kernel reads only input 0's shape (and its host inputs) and outputs a view of input 0 (Reshape,
  // Squeeze, Identity): the one kernel runs on every device, touching no element.
  bool shape_only = false;
  // Inputs read as values by the kernel itself (shapes, axes, bounds): the executor gives them to the
  // kernel on the host whatever device runs the node, as ONNX Runtime's CUDA kernels take them
  // (OrtMemTypeCPUInput), so no device kernel copies a value back on its own.
  std::vector<int> host_inputs = {};
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  // Kernels are registered per backend ("cpu", "cuda"), each for the opset ranges its since-versions open.
  bool add(std::string_view backend, const std::string& domain, const std::string& op_type,
           std::vector<int64_t> since_versions, KernelFactory factory);
  // The backend's factory for (domain, op_type) at the given opset, or nullptr when none is registered.
  const KernelFactory* find(std::string_view backend, const std::string& domain, const std::string& op_type,
                            int64_t opset) const;
  // Why find() returned nullptr, in words ("op not registered", "opset 5 older than the first supported 6").
  std::string why_unsupported(std::string_view backend, const std::string& domain, const std::string& op_type,
                              int64_t opset) const;
  bool add_traits(const std::string& domain, const std::string& op_type, OpTraits traits);
  // The op's traits record, or nullptr for an op that has none (an unregistered op).
  const OpTraits* traits(const std::string& domain, const std::string& op_type) const;
  struct Entry {
    std::string backend, domain, op_type;
    std::vector<int64_t> since_versions;
  };
  std::vector<Entry> entries() const;

 private:
  struct Versions {
    std::vector<std::pair<int64_t, KernelFactory>> by_since;  // sorted by since-version
  };
  std::map<std::tuple<std::string, std::string, std::string>, Versions> table_;  // (backend, domain, op)
  std::map<std::pair<std::string, std::string>, OpTraits> traits_;
};

// "exact", "elementwise", "transcendental", "accumulating".
std::string_view precision_class_name(PrecisionClass precision);

// The traits of a node's op; an op with no record (none is registered) has none of them.
const OpTraits& traits_of(const Node& node);

#define MPA_CONCAT_INNER(a, b) a##b
#define MPA_CONCAT(a, b) MPA_CONCAT_INNER(a, b)
#define MPA_OP_TRAITS(domain, op_type, ...)             \
  static const bool MPA_CONCAT(mpa_traits_, __LINE__) = \
      ::mpa::OpRegistry::instance().add_traits(domain, op_type, ::mpa::OpTraits __VA_ARGS__)
#define MPA_REGISTER_KERNEL(backend, domain, op_type, KernelClass, ...)                                            \
  static const bool MPA_CONCAT(mpa_registered_, __LINE__) = ::mpa::OpRegistry::instance().add(                     \
      backend, domain, op_type, {__VA_ARGS__}, [](const ::mpa::OpInit& init) -> std::unique_ptr<::mpa::OpKernel> { \
        return std::make_unique<KernelClass>(init);                                                                \
      })
#define MPA_REGISTER_OP(domain, op_type, KernelClass, ...) \
  MPA_REGISTER_KERNEL("cpu", domain, op_type, KernelClass, __VA_ARGS__)

}  // namespace mpa
