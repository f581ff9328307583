#include "reports/report_schema.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "reports/report_schema_text.h"  // kReportSchemaText: generated from the schema file by CMake

namespace mpa::report {

namespace {

const valijson::Schema& schema() {
  static const valijson::Schema* parsed = [] {
    static const nlohmann::json document = nlohmann::json::parse(kReportSchemaText);
    auto* made = new valijson::Schema;
    valijson::SchemaParser(valijson::SchemaParser::kDraft7)
        .populateSchema(valijson::adapters::NlohmannJsonAdapter(document), *made);
    return made;
  }();
  return *parsed;
}

}  // namespace

std::string schema_violation(const nlohmann::json& report) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  if (validator.validate(schema(), valijson::adapters::NlohmannJsonAdapter(report), &results)) return {};
  // valijson reports the innermost violation first: the field that is wrong, then each enclosing object.
  valijson::ValidationResults::Error error;
  results.popError(error);
  std::string where;
  for (const std::string& step : error.context) where += step;
  return where + ": " + error.description;
}

}  // namespace mpa::report
