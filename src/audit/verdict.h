// Turns audit statistics into verdicts: per node and target `safe`, `warn` or `unsafe` with reasons from
// a fixed vocabulary (overflow, underflow, precision_loss, nonfinite, weight_overflow, weight_underflow),
// a culprit ranking and the per-target summary. A pure function of the statistics and thresholds, so a
// merged report is re-evaluated the same way.
#pragma once
#include "reports/report.h"

namespace mpa {

void evaluate(report::Report& report, const std::vector<std::string>& graph_outputs);

}  // namespace mpa
