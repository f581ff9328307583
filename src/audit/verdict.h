// Turns audit statistics into verdicts: per node and target `safe`, `warn` or `unsafe` with reasons from
// a fixed vocabulary (overflow, underflow, precision_loss, nonfinite, weight_overflow, weight_underflow),
// a culprit ranking and the per-target summary. A pure function of the statistics and thresholds, so a
// merged report is re-evaluated the same way.
//
// Verdicts by consequence: saturation (overflow, flush to zero, Inf) is unsafe only when its traced
// consequence (report::Consequence) shows harm: NaN or Inf reaching a graph output, a changed non-float
// output, an output SQNR below the unsafe limit, or a trace cut short. Saturation that downstream nodes
// absorb, or whose effect on the outputs stays above the warn limit, is a warn naming where it went.
// A node that makes NaN is unsafe whatever follows. Untraced saturation (inside subgraphs) keeps the
// level its figures give.
#pragma once
#include "reports/report.h"

namespace mpa {

void evaluate(report::Report& report, const std::vector<std::string>& graph_outputs);

// Whether one sample's figures of a value in a format call for tracing its consequence: values beyond
// the format, non-finite values the target run makes alone, or a share of significant flushes that
// reaches the underflow warn limit. The audit traces exactly the saturation the verdicts judge.
bool worth_tracing(const probes::FormatFit& fit, int64_t isolated_nonfinite, const report::Thresholds& thresholds);

}  // namespace mpa
