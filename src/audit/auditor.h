// Lockstep audit: for every sample, one pass over the graph runs each node three ways —
//   reference  : FP32 (or FP64) inputs and math;
//   propagated : the whole graph in the target format (what a deployed low-precision model computes);
//   isolated   : the node alone in the target format, fed the reference inputs converted to the format
//                (the error the node itself introduces);
// and the probes observe every float output. Values are freed after their last consumer in all streams.
// Nodes inside If/Loop/Scan subgraphs are observed too, through the executor's SubgraphObserver: in the
// reference run each inner node's outputs are probed and the node is re-run alone in every target format;
// its propagated figures pair each of its reference runs with the target run of the same branch and
// iteration (runs whose branch or trip count differs between the streams have no pair).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/graph.h"
#include "reports/report.h"
#include "runtime/session.h"

namespace mpa {

// Which nodes the audit also runs alone in the target format (the isolated pass, a third computation of
// every node): all of them; only suspects, whose isolated error can change a verdict — the node's
// propagated error falls near or below the format's warn limit, a value it reads or writes leaves the
// format's window (overflow, significant flush, non-finite); or none. In every mode a node whose
// propagated inputs equal its reference inputs as stored in the format is not run again: its propagated
// run is its isolated run. Nodes inside If/Loop/Scan subgraphs always get their isolated run.
enum class IsolatedPass { All, Suspects, Off };
const char* isolated_pass_name(IsolatedPass pass);
IsolatedPass parse_isolated_pass(const std::string& name);

struct AuditOptions {
  Format reference = Format::FP32;  // FP32 or FP64
  std::vector<Format> targets = {Format::FP16};
  Accumulation accumulation = Accumulation::FP32;
  RuntimeProfile profile = RuntimeProfile::Generic;
  report::Thresholds thresholds;
  // FP8 targets store every tensor with a per-tensor scale absmax / max_finite, the absmax taken from the
  // reference (what FP8 inference recipes calibrate); otherwise they run unscaled.
  bool fp8_absmax_scaling = false;
  bool timing = false;  // per-node wall time in the report (the only figures that differ between runs)
  int threads = 1;
  std::string device = "cpu";  // the backend that runs every stream (backends/backend.h)
  // Top-level nodes computed in fp32 in the target runs (with their subgraphs), as a mixed-precision
  // deployment keeps them: their consumers in the target format read their outputs converted.
  std::vector<std::string> keep_fp32;
  IsolatedPass isolated = IsolatedPass::All;
  // Under IsolatedPass::Suspects, a node whose propagated SQNR in a sample stays this far above the
  // format's warn limit (and whose values stay within the format) is not run alone in that sample: its
  // isolated error, at most of the order of its propagated one, cannot reach the limit.
  double suspect_margin_db = 10;
};

// The session every audit-like run of a model is made with (its threads and device; formats are per stream).
SessionOptions session_options(const AuditOptions& options);

std::string accumulation_name(Accumulation a);
std::string profile_name(RuntimeProfile p);

class Auditor {
 public:
  Auditor(std::shared_ptr<const Graph> graph, AuditOptions options);
  ~Auditor();
  // Runs one sample through all streams and merges its statistics. Called once per sample, in any order.
  // `on_node` is called after each top-level node (its graph index); it may call fill() for a snapshot.
  // Returns the reference's graph outputs; `reference_record`, when set, receives every node output of the
  // reference stream (runtime/session.h), which a later run on the same feeds may reuse (fix's runs do).
  TensorMap observe(const TensorMap& feeds, int64_t sample_index, const std::function<void(size_t)>& on_node = {},
                    RunRecord* reference_record = nullptr);
  // The statistics so far, with verdicts and the summary evaluated. Fills `report.nodes` and
  // `report.summary`; the caller sets model identity and config.
  void fill(report::Report& report) const;
  size_t node_count() const;
  // Where the audit's time went (wall seconds, all samples so far): running kernels in all streams (of
  // which the reference stream), converting values between formats, the probes, and tracing the
  // consequences of values that saturate, flush or turn non-finite (audit/consequence.h). For bench/.
  // `isolated` is the part of `execute` spent running nodes alone in the target formats.
  struct TimeSplit {
    double execute = 0, reference = 0, isolated = 0, convert = 0, probes = 0, consequences = 0;
  };
  TimeSplit time_split() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpa
