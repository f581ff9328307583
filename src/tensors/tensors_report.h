// The JSON report of `mpaudit tensors` (schema reports/schema/mpaudit.tensors.1.json): deterministic (no
// clock, no machine facts, steps and tensors in file order), with the model audit's pieces for ranges,
// exponent histograms and format fit. NaN/Inf figures are written as null.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/gate.h"
#include "tensors/tensor_audit.h"

namespace mpa::tensors {

inline constexpr const char* kTensorsSchema = "mpaudit.tensors/1";

nlohmann::ordered_json tensors_report_json(const TensorAudit& audit, const std::vector<GateResult>& gates);

// `--fail-on` for tensor audits: [TARGET.]METRIC OP NUMBER. Per target, the worst tensor counts:
// overflow, flush_to_zero, significant_flush, subnormal (counts), overflow_frac, flush_to_zero_frac,
// significant_flush_frac, subnormal_frac (of nonzero values), empty_windows (tensors with no safe scale);
// vanished_frac (the largest fraction of vanishing updates, fp16 or bf16). Without a target: every
// target. Target-free: nonfinite (NaN/Inf values over all tensors), skipped_steps (dynamic loss scaling).
std::vector<GateResult> evaluate_tensor_gates(const TensorAudit& audit, const std::vector<std::string>& expressions);
// The same checks before the audit runs (syntax, metric and target names), so that a typo fails at once.
void check_tensor_gates(const std::vector<std::string>& expressions, const TensorAuditOptions& options);

}  // namespace mpa::tensors
