// The reports' JSON Schemas (reports/schema/mpaudit.report.4.json, mpaudit.fix.1.json), compiled into mpaudit:
// every report of the current schema that `merge` reads, and every fix report the dashboard opens, is
// validated against its schema before use, so a corrupt or hand-edited file is refused naming the file and
// the field, not read into wrong figures.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace mpa::report {

// The first violation of the current schema, as "<root>[nodes][3][...]: what is wrong", or "" when valid.
std::string schema_violation(const nlohmann::json& report);
// The same for a fix report (`mpaudit fix --json`).
std::string fix_schema_violation(const nlohmann::json& report);

}  // namespace mpa::report
