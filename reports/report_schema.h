// The report's JSON Schema (reports/schema/mpaudit.report.4.json), compiled into mpaudit: every report of the
// current schema that `merge` reads is validated against it before use, so a corrupt or hand-edited shard is
// refused naming the file and the field, not summed into wrong figures.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace mpa::report {

// The first violation of the current schema, as "<root>[nodes][3][...]: what is wrong", or "" when valid.
std::string schema_violation(const nlohmann::json& report);

}  // namespace mpa::report
