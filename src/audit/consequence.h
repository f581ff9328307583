// Consequence tracing: what a value's low-precision form does downstream (report::Consequence).
//
// A trace starts from one value in one target format, deviated where the target run saturates it: the
// elements that its producer alone on reference inputs, stored in the format, turns non-finite or flushes
// to zero (the rest keep their reference values: rounding is the precision_loss verdict's business). In
// the audit's lockstep pass each later node that
// reads a deviated value is run once more, in the reference precision, on the deviated values with every
// other input from the reference, and its outputs are compared with the reference's:
//   - an output off by half a format ulp or more, or non-finite where the reference is finite, deviates
//     and is followed further (a non-float output deviates when any element differs);
//   - a node none of whose outputs deviates has absorbed the deviation (a Softmax that maps -3.4e38 and
//     -inf to the same 0, a Max over padding, a saturated Sigmoid);
//   - a deviated graph output is measured against the reference output (Divergence).
// The trace ends when no deviated value is left (absorbed), at the end of the sample (it reached graph
// outputs), or when the sample's budget of extra node runs is spent (cut: harm not ruled out).
// The cost is one reference-precision node run per node the deviation reaches; a sample spends at most
// kRunsPerNode times the graph's node count on traces, first come first served in graph order.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "reports/report.h"
#include "runtime/session.h"

namespace mpa {

class ConsequenceTracer {
 public:
  static constexpr int64_t kRunsPerNode = 4;

  // Where a trace's figures go in the report: a top-level node's output (slot in the report's nodes,
  // output index) or a graph input (slot = kGraphInput, index among the graph inputs).
  struct Root {
    static constexpr size_t kGraphInput = static_cast<size_t>(-1);
    size_t slot = kGraphInput;
    size_t output = 0;
    size_t target = 0;
  };
  struct Finished {
    Root root;
    report::Consequence consequence;
  };
  using ValueLookup = std::function<const Tensor*(const std::string&)>;

  // `session` runs the main graph's nodes in `reference_config`; `params[k]` compares runs in target k;
  // `report_slot[i]` / `report_name[i]` are node i's place and name in the report; `kept_fp32[i]` marks
  // nodes computed in fp32 in the target runs.
  ConsequenceTracer(const Session& session, ExecConfig reference_config,
                    std::vector<probes::Divergence::Params> params, std::vector<size_t> report_slot,
                    std::vector<std::string> report_name, std::vector<bool> kept_fp32);

  void begin_sample();
  // Starts tracing `value` in target k from its deviated form. `narrowed`: the deviation is only the
  // value's conversion to the format on its way out of a node kept in fp32, which consumers also kept in
  // fp32 do not see (they read it as computed). `producer` is the node that made it (-1: a graph input).
  void start(const std::string& value, Root root, Tensor deviated, const Tensor& reference, bool narrowed,
             int64_t producer);
  // Runs node `index` for every trace that reads a deviated value. `reference` finds the reference
  // stream's values; `ref_out` are the node's reference outputs (in the reference's dtype).
  void step(size_t index, const ValueLookup& reference, const std::vector<const Tensor*>& ref_out);
  // Whether step(index) has anything to do: a live trace deviates a value node `index` reads.
  bool follows_into(size_t index) const;
  // Values freed after their last reader: traces left with no deviated value end absorbed.
  void release(const std::vector<std::string>& names);
  // Ends every live trace (end of the sample) and hands over all traces finished since the last call.
  std::vector<Finished> end_sample();

 private:
  struct Trace {
    Root root;
    std::map<std::string, Tensor> deviated;
    std::unordered_set<std::string> narrowed;
    report::Consequence result;
    bool live = true;
    // Whether `node` reads a value this trace deviates.
    bool reaches(const Node& node) const;
  };
  bool deviates(const Tensor& reference, const Tensor& run, size_t target, probes::Divergence& d) const;
  void note_harm(Trace& trace, int64_t node);
  void finish(Trace& trace, bool cut);

  const Session& session_;
  ExecConfig reference_config_;
  std::vector<probes::Divergence::Params> params_;
  std::vector<size_t> report_slot_;
  std::vector<std::string> report_name_;
  std::vector<bool> kept_fp32_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<Trace> traces_;
  std::vector<Finished> finished_;
  int64_t runs_left_ = 0;
};

}  // namespace mpa
