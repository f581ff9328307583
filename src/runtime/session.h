// The one executor: runs a graph node by node, in one stream or several in lockstep, placing each node on
// the backend the user asked for when it supports the node and on the CPU otherwise, making every transfer
// between devices and every format conversion itself; kernels created once per node, inputs checked
// against the graph's declarations, every intermediate freed after its last consumer, and an observer
// shown each node's runs (the audit and its probes attach there).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/backend.h"
#include "model/graph.h"
#include "ops/op.h"

namespace mpa {

struct SessionOptions {
  int threads = 1;
  // The whole graph in this precision: FP32 (plain inference), FP64 (a reference in double), or a
  // low-precision format emulated as runtime/precision.h describes (fp16, bf16, fp8, tf32 math).
  Format precision = Format::FP32;
  // Mixed precision: nodes (by name) whose outputs are stored in another format than `precision`, e.g.
  // the keep-FP32 set of an FP16 model. Values are converted where a consumer's format differs from
  // its producer's, as a mixed-precision model's Cast nodes do.
  std::map<std::string, Format> node_precision;
  Accumulation accumulation = Accumulation::FP32;
  RuntimeProfile profile = RuntimeProfile::Generic;
  std::string device = "cpu";  // the backend that runs the nodes (backends/backend.h)
  // Names of enclosing scopes whose values are the same in every run (their initializers and what only those
  // compute): a subgraph's session gets them from its parent, for the nodes it folds (Session::run_streams).
  std::set<std::string> outer_constants;
};

// Called after every node with its outputs (nullptr for outputs the node does not name).
using NodeHook = std::function<void(const Node& node, size_t node_index, const std::vector<const Tensor*>& outputs)>;

using TensorMap = std::map<std::string, Tensor>;

// What one run held in memory: values alive at once (feeds and intermediates, not initializers).
struct RunStats {
  size_t peak_live_values = 0;
  size_t peak_live_bytes = 0;
  size_t epilogue_nodes = 0;  // nodes run as epilogues of their producer (Session::epilogue_chains_)
};

// Where a node runs: the backend asked for, or the CPU with the reason the other could not.
struct Placement {
  const Backend* backend = nullptr;
  std::string fallback_reason;  // empty where the node runs on the backend asked for
};

// What the executor moved between the host and devices (feeds, fallbacks, outputs, the observer's copies).
struct Transfers {
  int64_t uploads = 0, downloads = 0;
  int64_t bytes_uploaded = 0, bytes_downloaded = 0;
};

struct UnsupportedNode {
  const Node* node;
  std::string reason;
};

// Every node output one stream of a run made, by the session's value slots, in the format it was stored in:
// kept so that a later run on the same feeds that changes only some nodes' settings reruns only those nodes
// and what depends on them (fix's keep-set search).
struct RunRecord {
  std::vector<Tensor> values;
  std::vector<Format> format;
  std::vector<ValuePtr> boxed;  // sequence/optional outputs
  size_t nbytes() const;
};

// One stream of a lockstep run (Session::run_streams): the reference, or one target's whole-graph run.
struct StreamPlan {
  // Per node, the settings it runs under (storage format and math); empty: the session's own. Values are
  // converted where a node's format differs from its producer's, as a mixed-precision model's Casts do.
  std::vector<ExecConfig> node_config;
  // FP8 per-tensor scaling (absmax recipes): a value converted into an FP8 format (initializers included)
  // takes the scale of its own absmax, and a node's outputs are stored with `output_scale(node, output)` (1
  // when empty).
  bool fp8_absmax_scaling = false;
  std::function<double(size_t node, size_t output)> output_scale;
  // Per node (empty: none), whether it computes in the stream's target format: such a node stores every
  // float output in it and reads every float value converted into it, float64 ones included, also where
  // the format stores as FP32 (TF32), as a target run does; other FP32 nodes keep float64 values as they are.
  std::vector<bool> computes_in_format;
  // Incremental runs (not with an observer): a node marked in `reused` does not run; its outputs are
  // `reuse`'s, a record of a run on the same feeds in which it and every node it depends on ran under the
  // settings they have here. `record`, when set, receives every node output of this stream.
  const RunRecord* reuse = nullptr;
  std::vector<bool> reused;
  RunRecord* record = nullptr;
};

// One stream's view of a node that ran in a lockstep run. Its tensors are on the host, except where the
// observer reads device tensors and the node ran on a device that computes probes (Backend::probe).
struct StreamStep {
  std::vector<const Tensor*> inputs;   // as the node read them, in its format (nullptr: omitted)
  std::vector<const Tensor*> outputs;  // stored in the node's format (nullptr: not named)
  const ExecConfig* config = nullptr;
  const Backend* backend = nullptr;    // where it ran
  // In streams after the first: the first stream's values as this node reads them, in its format (the
  // audit's isolated run of the node), where this node runs; nullptr in the first stream.
  const ScopeLookup* reference_as_read = nullptr;
  const ScopeLookup* scope = nullptr;  // every name the node can see, as it reads them
  double run_seconds = 0;              // the kernel (with its subgraphs), by the executor's wall clock
  std::optional<double> device_seconds;  // the backend's own time for it, where the backend has one
  double convert_seconds = 0;          // bringing its inputs and outputs onto their formats
};

// Watches a lockstep run, node by node.
class ExecObserver {
 public:
  virtual ~ExecObserver() = default;
  // Who watches the nodes that node `index`'s subgraphs run in `stream` (nullptr: nobody).
  virtual SubgraphObserver* subgraphs(size_t /*index*/, size_t /*stream*/) { return nullptr; }
  // Stream 0 ran node `index`, the others not yet: what depends on it (FP8 output scales) is decided here.
  virtual void after_first(size_t /*index*/, const StreamStep& /*first*/) {}
  // Every stream ran node `index`; the values it reads last are freed once this returns.
  virtual void node_done(size_t index, const std::vector<StreamStep>& streams) = 0;
  // Whether it reads StreamStep::device_seconds: asking a device for a node's time waits for the node.
  virtual bool wants_device_time() const { return false; }
  // Whether it takes a node's values where they are on a device that computes probes (it probes them there
  // and copies to the host only what it must), instead of host copies of every value.
  virtual bool reads_device_tensors() const { return false; }
};

// Whether a node's run read or made a sequence or optional value (tensor/value.h): the executor shows such a
// value as nullptr where the node names one. The audit neither reruns such a node nor probes those values.
bool meets_values(const Node& node, const std::vector<const Tensor*>& inputs,
                  const std::vector<const Tensor*>& outputs);

// Nodes whose (domain, op, opset) has no registered kernel, including inside subgraphs.
std::vector<UnsupportedNode> find_unsupported_nodes(const Graph& graph);

class Session : public SubgraphExecutor {
 public:
  // Creates every kernel up front: unsupported ops and bad attributes fail here, before any run.
  explicit Session(std::shared_ptr<const Graph> graph, SessionOptions options = {});
  ~Session();

  const Graph& graph() const { return *graph_; }
  // Runs the graph on feeds (one tensor per graph input; inputs backed by an initializer may be fed to
  // override it) and returns the graph outputs by name.
  // `outer` resolves names the graph reads but does not define: a subgraph's enclosing scopes.
  // `observer` sees every node run, here and inside subgraphs. `values` (tensor/value.h) gives the
  // sequence/optional feeds (and enclosing scopes' such values) and receives the sequence/optional outputs.
  TensorMap run(const TensorMap& feeds, const NodeHook& hook = {}, RunStats* stats = nullptr,
                const ScopeLookup* outer = nullptr, SubgraphObserver* observer = nullptr,
                ValueMap* values = nullptr) const;

  // Runs the graph once per stream, node by node in lockstep (node i in every stream, then node i+1), on
  // the same feeds, showing each node's runs to `observer` before their inputs are freed; returns each
  // stream's graph outputs. The one executor: run() is its single-stream case, the audit its many-stream one.
  // `value_feeds`: the sequence/optional feeds and enclosing scopes' such values; `value_outputs`: each
  // stream's sequence/optional graph outputs (either may be nullptr).
  std::vector<TensorMap> run_streams(const TensorMap& feeds, const std::vector<StreamPlan>& streams,
                                     ExecObserver* observer = nullptr, const ScopeLookup* outer = nullptr,
                                     RunStats* stats = nullptr, const ValueMap* value_feeds = nullptr,
                                     std::vector<ValueMap>* value_outputs = nullptr) const;

  // Fails unless feeds match the graph's inputs: tensors for tensor inputs, sequence/optional values (from
  // `value_feeds`) for inputs declared so.
  void check_feeds(const TensorMap& feeds, const ValueMap* value_feeds = nullptr) const;
  // Runs node `index` once more, outside any run (the audit's isolated runs, its consequence tracing): on
  // `inputs` (nullptr for omitted optional ones), under `config`, placed as a run under that config places
  // it; returns one tensor per node output (undefined where the node names none), on the host unless
  // `where_run` keeps them on the device that ran the node, stored in the config's format where it is not
  // FP32 or the node `computes_in_format` (with `output_scale(o)`, FP8).
  // `scope` serves the node's subgraphs (If/Loop/Scan), which read values by name. Errors name the node.
  std::vector<Tensor> rerun(size_t index, const std::vector<const Tensor*>& inputs, const ExecConfig& config,
                            bool computes_in_format, const ScopeLookup* scope = nullptr,
                            const std::function<double(size_t)>& output_scale = {}, bool where_run = false) const;
  // A host copy of a tensor on a device (the tensor itself on the host), counted as the executor's transfers.
  Tensor to_host(const Tensor& tensor) const { return move_to(tensor, *host_); }
  // Where node `index` runs under `config`, and why not on the backend asked for.
  Placement placement(size_t index, const ExecConfig& config) const;
  const Backend& requested_backend() const { return *requested_; }
  // Everything moved between the host and devices since the session was made, its subgraphs' included.
  Transfers transfers() const;
  // Values whose last reader is node `index`: free them after it ran.
  const std::vector<std::string>& release_after(size_t index) const { return release_after_[index]; }
  const ExecConfig& default_config() const { return config_; }
  // The graph's initializers as nodes storing in `storage` read them (`narrow_doubles`: nodes computing in a
  // target format, which read float64 values narrowed to its grid even where it stores as FP32, TF32;
  // `fp8_absmax_scaling`: FP8 formats with each initializer's absmax scale): converted once and kept.
  const std::map<std::string, Tensor>& initializers_in(Format storage, bool narrow_doubles = false,
                                                      bool fp8_absmax_scaling = false) const;
  // Runs a control-flow node's subgraph through a session of its own per precision setting (the audit
  // runs several), made on first use and kept for later iterations and samples.
  TensorMap run_subgraph(const std::shared_ptr<const Graph>& graph, const TensorMap& feeds, const ExecConfig& config,
                         const ScopeLookup* scope, SubgraphObserver* observer, ValueMap* values) const override;

 private:
  // Fills constants_ and foldable_ (below).
  void find_constants();
  const Backend& backend_for(size_t index, const ExecConfig& config) const;
  // Where node `index` reads input `input` when it runs on `runs_on`: there, or on the host for the inputs
  // its kernel reads as values itself (OpTraits::host_inputs).
  const Backend& reader_of(size_t index, size_t input, const Backend& runs_on) const;
  // `tensor` on `to`'s device: itself, or a copy through the host, counted.
  Tensor move_to(const Tensor& tensor, const Backend& to) const;
  // An initializer (one of initializers_in's) as a node on `at` reads it: moved there once per session and
  // device, and kept, as a GPU runtime keeps its weights resident, instead of once per run.
  const Tensor* resident(const Tensor& initializer, const Backend& at) const;
  // The host initializer that `copy` is resident()'s copy of, or null: a node that reads such an input on the
  // host reads the original instead of downloading the copy.
  const Tensor* resident_original(const Tensor& copy) const;
  void run_on(const Backend& backend, size_t index, const std::vector<const Tensor*>& inputs,
              std::vector<Tensor>& outputs, const ExecConfig& config, const ScopeLookup* scope,
              SubgraphObserver* observer, NodeValues* values, EpilogueSource* epilogues = nullptr) const;
  // run_on's work for any node and kernel (a fused one, a graph node's).
  void run_kernel(const Backend& backend, const Node& node, const OpKernel& kernel,
                  const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, const ExecConfig& config,
                  const ScopeLookup* scope, SubgraphObserver* observer, NodeValues* values,
                  EpilogueSource* epilogues = nullptr) const;
  // How each value is read: how often (a subgraph's read and a graph output count as two, never fused), by
  // which node (the only one where read once), and which node makes it.
  struct ValueUse {
    std::unordered_map<std::string, int> reads;
    std::unordered_map<std::string, size_t> reader, producer;
  };
  ValueUse value_use() const;
  // Fills silu_ and silu_mul_of_ (below).
  void find_silu(const ValueUse& use);
  // Fills epilogue_chains_ (below).
  void find_epilogue_chains(const ValueUse& use);

  std::shared_ptr<const Graph> graph_;
  SessionOptions options_;
  const Backend* requested_;  // --device
  const Backend* host_;       // the CPU: every node's fallback
  const bool own_kernels_;    // the requested backend runs kernels of its own table, not the CPU's
  ExecConfig config_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;         // per node, the CPU's
  std::vector<std::unique_ptr<OpKernel>> device_kernels_;  // per node, the requested backend's own (or null)
  mutable std::atomic<int64_t> uploads_{0}, downloads_{0}, bytes_uploaded_{0}, bytes_downloaded_{0};
  std::vector<ExecConfig> node_configs_;  // per node: its storage format and math settings
  // initializers_in's conversions, by (storage, narrow_doubles, fp8_absmax_scaling).
  mutable std::mutex initializers_mutex_;
  mutable std::map<std::tuple<Format, bool, bool>, std::map<std::string, Tensor>> initializers_in_;
  // Each floating conversion's original initializer and how it was converted (resident() repeats it on a device).
  struct Conversion {
    const Tensor* original;
    Format storage;
    double scale;
  };
  mutable std::map<const Tensor*, Conversion> converted_from_;
  // Constant folding, as onnxruntime does at session creation: a node without subgraphs whose inputs are all
  // constants (initializers not fed as inputs, outer constants, outputs of other such nodes) computes the same
  // outputs in every run. A plain run (one stream, the session's own settings, no observer) computes it once
  // and hands out those outputs afterwards (within an eighth of the memory budget); observed runs (the audit) and
  // mixed runs run it every time. This holds because every registered op computes its outputs from its inputs
  // and attributes alone (Dropout's training mask from its seed attribute; the random-number ops are not
  // supported).
  std::set<std::string> constants_;  // the names above, this graph's and its enclosing scopes'
  std::vector<bool> foldable_;       // per node
  mutable std::mutex folded_mutex_;
  mutable std::map<size_t, std::vector<Tensor>> folded_;  // per folded node, its outputs as stored
  mutable int64_t folded_bytes_ = 0;                      // what folded_ holds
  // SiLU, x · sigmoid(x), in plain runs: a Sigmoid whose only reader is a Mul by the Sigmoid's own input runs as
  // one Swish node in the Mul's place, where both run on the CPU in float32. Bit for bit the values of the two
  // nodes (the same functor computes the sigmoid, then one product), in one pass over x instead of three and
  // without the sigmoid's tensor: YOLOX-nano's 104 SiLUs took a third of its run.
  struct Silu {
    size_t x = 0;        // which of the Mul's inputs is x
    Node swish;          // x -> the Mul's output, named as the Mul
    std::unique_ptr<OpKernel> kernel;
  };
  std::map<size_t, Silu> silu_;   // by the Mul's index
  std::vector<int> silu_mul_of_;  // per node: for a Sigmoid of silu_, its Mul's index; else -1
  // Epilogues in plain runs (ops/op.h Epilogue): a node whose CPU kernel takes them (Conv) and whose output's
  // only reader maps it value by value (BatchNormalization, Relu, an Add of the residual...), and so on down
  // the chain, runs those readers on each block of its output while the block is in cache, where all of them
  // run on the CPU in float32 and their other inputs are at hand when it runs. Bit for bit the values of the
  // nodes run one by one (each computes with its own functors), without the tensors between them and the
  // passes over memory that made them: ResNet-50's BatchNormalization, Relu and Add took a tenth of its run.
  struct EpilogueLink {
    size_t node;  // the reader
    size_t from;  // which of its inputs is the chain's value
  };
  std::map<size_t, std::vector<EpilogueLink>> epilogue_chains_;  // by the producer's index
  mutable std::mutex resident_mutex_;
  mutable std::map<std::pair<const Tensor*, Device>, Tensor> resident_;  // resident()'s copies
  mutable std::map<const Tensor*, const Tensor*> resident_originals_;     // each copy's host initializer
  // For each node, the values whose last reader it is (freed right after it runs).
  std::vector<std::vector<std::string>> release_after_;
  // A run keeps its values in a vector: every name the graph defines (inputs, initializers, node outputs)
  // has a slot, and each node knows the slots it reads, writes and frees, so no string is hashed or
  // allocated per value and run (small models and subgraph runs were spending a fifth of their time there).
  std::unordered_map<std::string, int> slot_of_;
  std::unordered_set<std::string> feedable_;  // graph inputs and initializers
  std::vector<int> optional_inputs_;          // slots of optional-typed graph inputs: empty optionals when not fed
  struct NodeSlots {
    std::vector<int> inputs;                  // -1: omitted, or a name from an enclosing scope
    std::vector<const Tensor*> initializers;  // per input: the graph's own (fp32) initializer of that name
    std::vector<int> outputs;                 // -1: not named
    std::vector<int> release;
  };
  std::vector<NodeSlots> node_slots_;
  mutable std::mutex subgraph_mutex_;
  mutable std::map<std::tuple<const Graph*, Format, Accumulation, RuntimeProfile, int>, std::unique_ptr<Session>>
      subgraph_sessions_;
};

}  // namespace mpa
