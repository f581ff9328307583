// The runs `mpaudit fix` judges keep-sets by: the model on every sample with some nodes in FP32 and the
// rest in the target format, as a mixed-precision deployment computes it (runtime/precision.h: values are
// converted where a node's format differs from its producer's, as the Casts at island borders do), its
// graph outputs compared with the reference's, computed once.
//
// A run is incremental: the values of recent runs (and of the reference, which is the all-FP32 run) are kept,
// within a share of the memory budget, and a keep-set runs, on each sample, only the nodes whose setting differs
// from that of the closest kept run with values of that sample, and the nodes downstream of them; the others'
// values are that run's, computed the same way (a set run before on some samples reruns nothing there). Its
// cost is counted as what it ran: node runs over (nodes × samples), in full-run equivalents.
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "audit/auditor.h"
#include "fix/output_gates.h"
#include "io/inputs.h"
#include "model/graph.h"
#include "runtime/session.h"

namespace mpa::fix {

// Kept runs (and the audit's reference values handed over for them) hold at most this share of the memory
// budget.
inline constexpr int64_t kRecordShareOfBudget = 4;

class MixedRuns {
 public:
  // Runs over samples [first, last) of `samples` (read when the first run needs them; the reference's outputs
  // are computed then, once, and kept). `options` gives the reference, the one target, accumulation, runtime
  // profile, tolerances, threads, device. `io_in_target`: the deployed model's float32 inputs and outputs are
  // in the target format (fix --keep-io-types false), so runs read the inputs, and give the outputs, rounded
  // onto it.
  MixedRuns(std::shared_ptr<const Graph> graph, const SampleSource& samples, int64_t first, int64_t last,
            const AuditOptions& options, bool io_in_target = false);

  // The graph outputs declared floating (or undeclared), in graph order: what the gates measure.
  const std::vector<std::string>& outputs() const { return outputs_; }
  // Called after each sample with the figures so far completed, for the samples not run, by the reference's
  // own outputs (the best they could give): true says a gate fails whatever the rest give, which ends the run.
  using Settled = std::function<bool(const std::vector<OutputFigures>& bounded)>;
  struct Run {
    std::vector<OutputFigures> figures;  // each floating output's; when ended early, the bounded figures
    int64_t samples = 0;                 // the samples run
    bool every_sample = false;           // judged on every sample (ended early or not)
  };
  // One run with `keep` (top-level node names) in FP32 on the samples in play, or on every sample, hardest
  // first, until `settled` ends it. A sample that settles a run leads from then on, so that the next run
  // failing a gate tends to fail it on its first sample; one outside the samples in play joins them. Failing
  // on some samples is failing, so a search can judge sets on the samples in play and verify on every sample
  // only the set it settles on (fix/keep_search.h).
  Run run(const std::vector<std::string>& keep, const Settled& settled = {}, bool every_sample = true);
  // The samples in play: the first, then each that settled a run of every sample.
  int64_t samples_in_play() const { return in_play_; }
  // Runs made by run() so far.
  int64_t runs() const { return runs_; }
  // What they ran, in full-run equivalents: node runs over (nodes × samples).
  double run_equivalents() const { return run_equivalents(node_runs_); }
  // `node_runs` in full-run equivalents: a run's share is taken from the difference of the counts, exact, rather
  // than of two sums, which can round past 1.
  double run_equivalents(int64_t node_runs) const;
  int64_t node_runs() const { return node_runs_; }
  // Whether the reference ran here (one full-run equivalent more), rather than being taken from the audit.
  bool reference_ran() const { return (!reference_.empty() && !reference_taken_) || first_ == last_; }
  // The reference's graph outputs per sample and, where they are all there, its records of every node output,
  // from an audit of the same samples with the same reference settings (cli/audit_job.h keep_reference): the
  // reference need not run again. Before any run.
  void take_reference(std::vector<TensorMap> outputs, std::vector<RunRecord> records);

  // A float32 graph input with values beyond the target's largest finite value, where the inputs are in the
  // target format: the deployed model meets them overflowed before any node runs, whatever it keeps.
  struct InputOverflow {
    std::string input;
    int64_t values = 0, of = 0;  // over every sample
    double absmax = 0;
  };
  // Reads the samples (and runs the reference) if no run has yet.
  const std::vector<InputOverflow>& inputs_overflowing();

  // Each top-level node's float outputs against the reference's in runs with each of `keep_sets` in FP32 (what
  // the fix report shows per node: all in the target format, then with the keep-set), over every sample. One
  // lockstep pass of the reference and the runs, neither incremental nor counted in runs(): every node runs.
  // The graph inputs are read as given in every run, also where the inputs are in the target format.
  struct NodeFigures {
    size_t node = 0;
    std::vector<std::vector<probes::Divergence>> runs;  // [keep set][measured output]
  };
  std::vector<NodeFigures> node_figures(const std::vector<std::vector<std::string>>& keep_sets) const;

 private:
  // A run's settings (per node: kept in FP32) and what it made on each sample it ran (others empty).
  struct Recorded {
    std::vector<bool> kept;
    std::vector<RunRecord> samples;
    size_t nbytes = 0;
  };
  void run_reference();
  bool have_reference() const { return !reference_.empty() || first_ == last_; }
  // Reads sample `s` as the runs feed it, and the reference's outputs against themselves, once the reference's
  // outputs of it are known.
  void know_sample(int64_t s, const TensorMap& sample);
  // Per node, the settings of a run with `keep` in FP32.
  StreamPlan plan_for(const std::vector<std::string>& keep, std::vector<bool>* kept = nullptr) const;
  // Which nodes must run for `kept` when the values of `base` are at hand: those kept differently, and what
  // reads their outputs, directly or not.
  std::vector<bool> to_run(const std::vector<bool>& kept, const std::vector<bool>& base) const;
  void remember(Recorded recorded);
  // `figures` of the samples `run` marks, with the reference's own outputs for the others: the best they
  // could give.
  std::vector<OutputFigures> bounded_by_the_rest(const std::vector<OutputFigures>& figures,
                                                 const std::vector<bool>& run) const;
  // `sample` as the deployed model receives it: float32 inputs rounded onto the target where io_in_target_.
  TensorMap as_deployed(const TensorMap& sample);

  std::shared_ptr<const Graph> graph_;
  const SampleSource& samples_;
  int64_t first_, last_;
  Session session_;
  ExecConfig reference_config_, fp32_config_, target_config_;
  Format target_;
  bool io_in_target_;
  probes::Divergence::Params params_;
  std::vector<TensorMap> feeds_, reference_;
  std::vector<std::vector<OutputFigures>> exact_;  // per sample, the reference's outputs against themselves
  std::vector<size_t> order_;                      // the samples, hardest first
  size_t in_play_ = 1;                             // the first of order_
  std::vector<InputOverflow> inputs_overflowing_;
  std::vector<std::string> outputs_;
  std::vector<std::vector<size_t>> producers_;  // per node, the nodes whose outputs it reads (subgraphs' too)
  std::deque<Recorded> recorded_;               // most recent first
  bool recording_ = true;                       // false once a record did not fit the memory budget
  bool reference_taken_ = false;                // from the audit (take_reference)
  int64_t runs_ = 0, node_runs_ = 0;
};

}  // namespace mpa::fix
