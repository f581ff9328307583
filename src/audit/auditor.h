// Lockstep audit: for every sample, one pass over the graph runs each node three ways —
//   reference  : FP32 (or FP64) inputs and math;
//   propagated : the whole graph in the target format (what a deployed low-precision model computes);
//   isolated   : the node alone in the target format, fed the reference inputs converted to the format
//                (the error the node itself introduces);
// and the probes observe every float output. Values are freed after their last consumer in all streams.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/graph.h"
#include "reports/report.h"
#include "runtime/session.h"

namespace mpa {

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
};

std::string accumulation_name(Accumulation a);
std::string profile_name(RuntimeProfile p);

class Auditor {
 public:
  Auditor(std::shared_ptr<const Graph> graph, AuditOptions options);
  ~Auditor();
  // Runs one sample through all streams and merges its statistics. Called once per sample, in any order.
  void observe(const TensorMap& feeds, int64_t sample_index, const std::function<void(size_t)>& on_node = {});
  // The statistics so far, with verdicts and the summary evaluated. Fills `report.nodes` and
  // `report.summary`; the caller sets model identity and config.
  void fill(report::Report& report) const;
  size_t node_count() const;
  // Where the audit's time went (wall seconds, all samples so far): running kernels in all streams,
  // converting values between formats, and the probes. For the probe-overhead figure in bench/.
  struct TimeSplit {
    double execute = 0, convert = 0, probes = 0;
  };
  TimeSplit time_split() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpa
