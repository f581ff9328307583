#include "reports/report_schema.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

// k_report_schema_text, k_fix_schema_text: generated from the schema files by CMake
#include "reports/fix_schema_text.h"
#include "reports/report_schema_text.h"

namespace mpa::report {

namespace {

const valijson::Schema* parse_schema(const char* text) {
  const auto* document = new nlohmann::json(nlohmann::json::parse(text));
  auto* made = new valijson::Schema;
  valijson::SchemaParser(valijson::SchemaParser::kDraft7)
      .populateSchema(valijson::adapters::NlohmannJsonAdapter(*document), *made);
  return made;
}

std::string violation_of(const valijson::Schema& schema, const nlohmann::json& report) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  if (validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(report), &results)) return {};
  // valijson reports the innermost violation first: the field that is wrong, then each enclosing object.
  valijson::ValidationResults::Error error;
  results.popError(error);
  std::string where;
  for (const std::string& step : error.context) where += step;
  return where + ": " + error.description;
}

}  // namespace

std::string schema_violation(const nlohmann::json& report) {
  static const valijson::Schema* schema = parse_schema(k_report_schema_text);
  return violation_of(*schema, report);
}

std::string fix_schema_violation(const nlohmann::json& report) {
  static const valijson::Schema* schema = parse_schema(k_fix_schema_text);
  return violation_of(*schema, report);
}

}  // namespace mpa::report
