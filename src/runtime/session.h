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

  // The building blocks of run(), for drivers that step several streams in lockstep (the audit).
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
