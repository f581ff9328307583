// `--fail-on` expressions, one per line, as `audit` checks them before it runs, evaluates them over a report,
// and as `tensors` checks and evaluates its own.
#include <cmath>
#include <sstream>

#include "audit/gate.h"
#include "tensors/tensors_report.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// Two targets and two outputs, one of them with undefined figures (a NaN output's SQNR).
mpa::report::Report two_target_report() {
  mpa::report::Report report;
  mpa::report::TargetSummary fp16;
  fp16.pass = false;
  fp16.unsafe_nodes = {"mask/scale"};
  fp16.outputs = {{"logits", 0.5, 0.02, 0.999, 35}, {"probs", NAN, NAN, NAN, NAN}};
  report.summary["fp16"] = fp16;
  mpa::report::TargetSummary bf16;
  bf16.warn_nodes = {"softmax"};
  bf16.outputs = {{"logits", 0.01, 0.001, 1, 60}, {"probs", 0, 0, 1, INFINITY}};
  report.summary["bf16"] = bf16;
  return report;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mpa::report::Report report = two_target_report();
  static const mpa::tensors::TensorAudit tensor_audit;
  std::vector<std::string> expressions;
  std::istringstream lines(mpa::fuzz::as_string(data, size));
  for (std::string line; std::getline(lines, line);) expressions.push_back(line);
  mpa::fuzz::refusing_bad_input([&] { mpa::check_gates(expressions, {"fp16", "bf16"}, {"logits", "probs"}); });
  mpa::fuzz::refusing_bad_input([&] { mpa::evaluate_gates(report, expressions); });
  mpa::fuzz::refusing_bad_input([&] { mpa::tensors::check_tensor_gates(expressions, tensor_audit.options); });
  mpa::fuzz::refusing_bad_input([&] { mpa::tensors::evaluate_tensor_gates(tensor_audit, expressions); });
  return 0;
}
