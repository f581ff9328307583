#include "reports/fix_report.h"

#include "probes/probe_common.h"

namespace mpa::report {

namespace {

nlohmann::ordered_json gate_values(const std::vector<FixGateValue>& values) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const FixGateValue& v : values)
    out.push_back(
        {{"gate", v.gate}, {"output", v.output}, {"value", probes::number_or_null(v.value)}, {"held", v.held}});
  return out;
}

nlohmann::ordered_json export_json(const std::optional<FixExport>& e) {
  if (!e) return nullptr;
  nlohmann::ordered_json initializers = nlohmann::ordered_json::array();
  for (const fix::InitializerKeptFp32& i : e->result.initializers_kept_fp32)
    initializers.push_back(
        {{"name", i.name}, {"reason", i.reason}, {"elements", i.elements}, {"consumers", i.consumers}});
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const fix::NodeKeptFp32& n : e->result.nodes_kept_fp32)
    nodes.push_back({{"node", n.node}, {"op_type", n.op_type}, {"reason", n.reason}});
  return {{"path", e->path},
          {"format", e->format},
          {"keep_io_types", e->keep_io_types},
          {"nodes_in_target", e->result.nodes_in_target},
          {"nodes_in_fp32", e->result.nodes_in_fp32},
          {"casts_inserted", e->result.casts_inserted},
          {"initializers_converted", e->result.initializers_converted},
          {"initializers_kept_fp32", initializers},
          {"nodes_kept_fp32", nodes}};
}

}  // namespace

nlohmann::ordered_json to_json(const FixReport& r) {
  nlohmann::ordered_json keep = nlohmann::ordered_json::array();
  for (const KeptNode& k : r.keep)
    keep.push_back({{"node", k.node},
                    {"op_type", k.op_type},
                    {"outputs", k.outputs},
                    {"audit_verdict", k.audit_verdict},
                    {"audit_reasons", k.audit_reasons},
                    {"needed_because", gate_values(k.needed_because)}});
  nlohmann::ordered_json trials = nlohmann::ordered_json::array();
  for (const FixTrial& t : r.trials)
    trials.push_back(
        {{"purpose", t.purpose}, {"kept", t.kept}, {"pass", t.pass}, {"run_equivalents", t.run_equivalents}});
  nlohmann::ordered_json presets = nlohmann::ordered_json::array();
  for (const PresetComparison& p : r.presets)
    presets.push_back({{"name", p.name}, {"kept", p.kept}, {"pass", p.pass}, {"gates", gate_values(p.gates)}});
  return {{"schema", kFixSchema},
          {"tool", {{"name", "mpaudit"}, {"version", r.tool_version}}},
          {"model", {{"path", r.model_path}, {"sha256", r.model_sha256}}},
          {"config",
           {{"target", r.target},
            {"reference", r.reference},
            {"inputs", r.inputs},
            {"samples", r.samples},
            {"gates", r.gates},
            {"forced_fp32", r.forced_fp32}}},
          {"met", r.met},
          {"minimal", r.minimal},
          {"note", r.note},
          {"keep", keep},
          {"before", gate_values(r.before)},
          {"after", gate_values(r.after)},
          {"trials", trials},
          {"presets", presets},
          {"cost",
           {{"audit_run_equivalents", r.audit_run_equivalents},
            {"reference_runs", r.reference_runs},
            {"mixed_runs", r.mixed_runs},
            {"mixed_run_equivalents", r.mixed_run_equivalents},
            {"comparison_runs", r.comparison_runs},
            {"total_run_equivalents", r.total_run_equivalents()}}},
          {"export", export_json(r.exported)}};
}

std::string serialize(const FixReport& report) {
  return to_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace mpa::report
