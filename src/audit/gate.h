// CI gates over a report: `--fail-on` expressions such as `unsafe_nodes>0`, `output.max_rel_err>1e-2`,
// `fp16.output[logits].sqnr_db<40`. Grammar: [TARGET.]METRIC OP NUMBER, OP one of > >= < <= == !=.
// METRIC: unsafe_nodes | warn_nodes | output.M | output[NAME].M with M one of max_abs_err, max_rel_err,
// cosine, sqnr_db. output.M takes the worst output (largest error, smallest cosine/SQNR). Without a
// TARGET the gate applies to every target in the report.
#pragma once
#include <string>
#include <vector>

#include "reports/report.h"

namespace mpa {

struct GateResult {
  std::string expression;
  bool failed = false;
  std::string detail;  // "fp16: output.max_rel_err = 0.031 > 0.01"
};

// Fails (mpa::Error) on a malformed expression or one naming an unknown target or output.
std::vector<GateResult> evaluate_gates(const report::Report& report, const std::vector<std::string>& expressions);

// The same checks before an audit runs, against the targets and graph outputs its report will have, so
// that a typo fails at once rather than after the audit.
void check_gates(const std::vector<std::string>& expressions, const std::vector<std::string>& targets,
                 const std::vector<std::string>& outputs);

}  // namespace mpa
