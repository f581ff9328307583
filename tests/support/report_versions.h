// A report as an earlier schema wrote it, made from one of today's: for the tests that readers (read_report,
// merge, diff) still take the versions mpaudit has shipped.
#pragma once
#include <nlohmann/json.hpp>

namespace mpa::test {

// Schema 3: before the isolated pass could be narrowed (config.isolated, node targets' isolated_skipped).
inline void as_schema_three(nlohmann::json& report) {
  report["schema"] = "mpaudit.report/3";
  report["config"].erase("isolated");
  for (auto& node : report["nodes"])
    for (auto& [fmt, target] : node["targets"].items()) target.erase("isolated_skipped");
}

// Schema 2: before placement (config.backend, the placement summary, node fallbacks).
inline void as_schema_two(nlohmann::json& report) {
  as_schema_three(report);
  report["schema"] = "mpaudit.report/2";
  report["config"].erase("backend");
  report.erase("placement");
  for (auto& node : report["nodes"]) {
    for (const char* key : {"fallbacks", "op_class", "sums_in", "device_time_ms"}) node.erase(key);
    node["state"].erase("device_time_ms_total");
  }
}

// Schema 1: before traced consequences, the root/harm fields of node verdicts and verified advice.
inline void as_schema_one(nlohmann::json& report) {
  as_schema_two(report);
  report["schema"] = "mpaudit.report/1";
  for (auto& [fmt, summary] : report["summary"]["targets"].items()) summary.erase("advice");
  for (auto& node : report["nodes"]) {
    for (auto& [fmt, target] : node["targets"].items())
      for (const char* key : {"consequence", "harm_at", "roots"}) target.erase(key);
    for (auto& tensor : node["tensors"])
      if (tensor.contains("targets"))
        for (auto& [fmt, target] : tensor["targets"].items()) target.erase("consequence");
  }
}

}  // namespace mpa::test
