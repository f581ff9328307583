// Runs a graph node by node on the CPU: kernels created once per node, inputs checked against the
// graph's declarations, every intermediate freed after its last consumer, and a hook after each node
// (probes attach there).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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
};

// Called after every node with its outputs (nullptr for outputs the node does not name).
using NodeHook = std::function<void(const Node& node, size_t node_index, const std::vector<const Tensor*>& outputs)>;

using TensorMap = std::map<std::string, Tensor>;

// What one run held in memory: values alive at once (feeds and intermediates, not initializers).
struct RunStats {
  size_t peak_live_values = 0;
  size_t peak_live_bytes = 0;
};

struct UnsupportedNode {
  const Node* node;
  std::string reason;
};

// One stream of a lockstep run (Session::run_streams): the reference, or one target's whole-graph run.
struct StreamPlan {
  // Per node, the settings it runs under (storage format and math); empty: the session's own. Values are
  // converted where a node's format differs from its producer's, as a mixed-precision model's Casts do.
  std::vector<ExecConfig> node_config;
  // Initializers as nodes storing in a format read them, converted by the caller once for many runs;
  // formats not listed read the session's own (FP32: the graph's initializers).
  std::map<Format, const std::map<std::string, Tensor>*> initializers;
  // FP8 per-tensor scaling (absmax recipes): a value converted into an FP8 format takes the scale of its own
  // absmax, and a node's outputs are stored with `output_scale(node, output)` (1 when empty).
  bool fp8_absmax_scaling = false;
  std::function<double(size_t node, size_t output)> output_scale;
  // Per node (empty: none), whether it computes in the stream's target format: such a node stores every
  // float output in it and reads every float value converted into it, float64 ones included, also where
  // the format stores as FP32 (TF32), as a target run does; other FP32 nodes keep float64 values as they are.
  std::vector<bool> computes_in_format;
};

// One stream's view of a node that ran in a lockstep run.
struct StreamStep {
  std::vector<const Tensor*> inputs;   // as the node read them, in its format (nullptr: omitted)
  std::vector<const Tensor*> outputs;  // stored in the node's format (nullptr: not named)
  const ExecConfig* config = nullptr;
  const ScopeLookup* scope = nullptr;  // every name the node can see, as it reads them
  double run_seconds = 0;              // the kernel (with its subgraphs)
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
};

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
  // `observer` sees every node run, here and inside subgraphs.
  TensorMap run(const TensorMap& feeds, const NodeHook& hook = {}, RunStats* stats = nullptr,
                const ScopeLookup* outer = nullptr, SubgraphObserver* observer = nullptr) const;

  // Runs the graph once per stream, node by node in lockstep (node i in every stream, then node i+1), on
  // the same feeds, showing each node's runs to `observer` before their inputs are freed; returns each
  // stream's graph outputs. The one executor: run() is its single-stream case, the audit its many-stream one.
  std::vector<TensorMap> run_streams(const TensorMap& feeds, const std::vector<StreamPlan>& streams,
                                     ExecObserver* observer = nullptr, const ScopeLookup* outer = nullptr,
                                     RunStats* stats = nullptr) const;

  // Fails unless feeds match the graph's inputs.
  void check_feeds(const TensorMap& feeds) const;
  // Runs node `index` on its inputs (nullptr for omitted optional ones) and returns one tensor per node
  // output (undefined where the node names no output). Errors name the node.
  // `scope` serves the node's subgraphs (If/Loop/Scan), which read values by name; `observer` watches
  // the nodes they run.
  std::vector<Tensor> run_node(size_t index, std::vector<const Tensor*> inputs, const ExecConfig& config,
                               const ScopeLookup* scope = nullptr, SubgraphObserver* observer = nullptr) const;
  // Values whose last reader is node `index`: free them after it ran.
  const std::vector<std::string>& release_after(size_t index) const { return release_after_[index]; }
  const ExecConfig& default_config() const { return config_; }
  // Runs a control-flow node's subgraph through a session of its own per precision setting (the audit
  // runs several), made on first use and kept for later iterations and samples.
  TensorMap run_subgraph(const std::shared_ptr<const Graph>& graph, const TensorMap& feeds, const ExecConfig& config,
                         const ScopeLookup* scope, SubgraphObserver* observer) const override;

 private:
  std::shared_ptr<const Graph> graph_;
  SessionOptions options_;
  const Backend* backend_;
  ExecConfig config_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;
  std::vector<ExecConfig> node_configs_;  // per node: its storage format and math settings
  // Initializers converted once per storage format in use (FP32 nodes read the graph's own).
  std::map<Format, std::map<std::string, Tensor>> initializers_by_format_;
  // For each node, the values whose last reader it is (freed right after it runs).
  std::vector<std::vector<std::string>> release_after_;
  // A run keeps its values in a vector: every name the graph defines (inputs, initializers, node outputs)
  // has a slot, and each node knows the slots it reads, writes and frees, so no string is hashed or
  // allocated per value and run (small models and subgraph runs were spending a fifth of their time there).
  std::unordered_map<std::string, int> slot_of_;
  std::unordered_set<std::string> feedable_;  // graph inputs and initializers
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
