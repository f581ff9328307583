// A JSON Schema (draft-07) read from a file and checked with valijson: the report contract tests of both
// report kinds (mpaudit.report.2.json, mpaudit.tensors.1.json) validate what the CLI writes through it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "support/run_cli.h"

namespace mpa::test {

class JsonSchema {
 public:
  explicit JsonSchema(const std::string& path) : document_(nlohmann::json::parse(read_whole_file(path))) {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(document_), schema_);
  }
  // Every violation, one per line ("" when the document is valid).
  std::string violations(const nlohmann::json& document) const {
    valijson::Validator validator;
    valijson::ValidationResults results;
    if (validator.validate(schema_, valijson::adapters::NlohmannJsonAdapter(document), &results)) return "";
    std::string text;
    for (const auto& error : results) {
      for (const std::string& step : error.context) text += step;
      text += ": " + error.description + "\n";
    }
    return text;
  }

 private:
  nlohmann::json document_;
  valijson::Schema schema_;
};

}  // namespace mpa::test
