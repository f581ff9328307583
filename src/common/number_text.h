// Numbers and counts written in option values: the whole text must be one of them, so that "1e-3junk",
// " 2" or "+1" is refused rather than read as far as it parses.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace mpa {

// A finite number in strtod's syntax (no leading space).
inline std::optional<double> parse_finite_number(const std::string& text) {
  if (text.empty() || !(text[0] == '-' || text[0] == '.' || (text[0] >= '0' && text[0] <= '9'))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Decimal digits only, at most 18 of them (fits int64 with room to add).
inline std::optional<int64_t> parse_count(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 18) return std::nullopt;
  return std::stoll(text);
}

}  // namespace mpa
