// The comparison every `--fail-on` gate ends with, `METRIC OP NUMBER`, shared by the model audit's gates
// (audit/gate.h) and the tensor audit's (tensors/tensor_gates.h), so both read limits and compare alike.
#pragma once
#include <cctype>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/number_text.h"

namespace mpa {

// The regex alternatives of OP, longest first so that ">=" is not read as ">".
inline constexpr const char* kGateOperators = ">=|<=|==|!=|>|<";

// NUMBER of a gate: a finite number, or inf / -inf; fails naming the expression.
inline double parse_gate_limit(const std::string& number, const std::string& expression) {
  std::string magnitude = number;
  const bool negative = !magnitude.empty() && magnitude[0] == '-';
  if (!magnitude.empty() && (magnitude[0] == '-' || magnitude[0] == '+')) magnitude.erase(0, 1);
  std::string lower;
  for (char c : magnitude) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity") return negative ? -INFINITY : INFINITY;
  const std::optional<double> limit = parse_finite_number(!number.empty() && number[0] == '+' ? magnitude : number);
  if (!(limit.has_value())) fail("--fail-on '" + expression + "': bad number '" + number + "'");
  return *limit;
}

// Whether `value OP limit` holds, which fails the gate. An undefined figure (NaN) never passes a gate.
inline bool gate_comparison_holds(double value, const std::string& op, double limit) {
  if (std::isnan(value)) return true;
  if (op == ">") return value > limit;
  if (op == ">=") return value >= limit;
  if (op == "<") return value < limit;
  if (op == "<=") return value <= limit;
  if (op == "==") return value == limit;
  return value != limit;
}

}  // namespace mpa
