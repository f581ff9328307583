#include "reports/fix_report.h"

#include "common/error.h"
#include "model/loader.h"
#include "probes/probe_common.h"
#include "reports/report_schema.h"

namespace mpa::report {

namespace {

nlohmann::ordered_json gate_values(const std::vector<FixGateValue>& values) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const FixGateValue& v : values)
    out.push_back(
        {{"gate", v.gate}, {"output", v.output}, {"value", probes::number_or_null(v.value)}, {"held", v.held}});
  return out;
}

nlohmann::ordered_json node_run(const FixNodeRun& run) {
  return {{"sqnr_db", probes::number_or_null(run.sqnr_db)},
          {"max_rel_err", probes::number_or_null(run.max_rel_err)},
          {"max_abs_err", probes::number_or_null(run.max_abs_err)},
          {"nonfinite", run.nonfinite}};
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
                    {"needed_because", gate_values(k.needed_because)},
                    {"needed_samples", k.needed_samples}});
  nlohmann::ordered_json trials = nlohmann::ordered_json::array();
  for (const FixTrial& t : r.trials)
    trials.push_back(
        {{"purpose", t.purpose}, {"kept", t.kept}, {"pass", t.pass}, {"run_equivalents", t.run_equivalents},
         {"samples", t.samples}});
  nlohmann::ordered_json presets = nlohmann::ordered_json::array();
  for (const PresetComparison& p : r.presets)
    presets.push_back({{"name", p.name}, {"kept", p.kept}, {"pass", p.pass}, {"gates", gate_values(p.gates)}});
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const FixNode& n : r.nodes)
    nodes.push_back({{"node", n.node},
                     {"op_type", n.op_type},
                     {"kept", n.kept},
                     {"before", node_run(n.before)},
                     {"after", n.after ? node_run(*n.after) : nlohmann::ordered_json(nullptr)}});
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
          {"nodes", nodes},
          {"cost",
           {{"audit_run_equivalents", r.audit_run_equivalents},
            {"reference_runs", r.reference_runs},
            {"mixed_runs", r.mixed_runs},
            {"mixed_run_equivalents", r.mixed_run_equivalents},
            {"comparison_runs", r.comparison_runs},
            {"node_figure_runs", r.node_figure_runs},
            {"total_run_equivalents", r.total_run_equivalents()}}},
          {"export", export_json(r.exported)}};
}

std::string serialize(const FixReport& report) {
  return to_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

double number_or_nan(const nlohmann::json& v) { return v.is_null() ? NAN : v.get<double>(); }

std::vector<FixGateValue> gate_values_from(const nlohmann::json& j) {
  std::vector<FixGateValue> values;
  for (const nlohmann::json& v : j)
    values.push_back({v.at("gate").get<std::string>(), v.at("output").get<std::string>(), number_or_nan(v.at("value")),
                      v.at("held").get<bool>()});
  return values;
}

FixNodeRun node_run_from(const nlohmann::json& j) {
  return {number_or_nan(j.at("sqnr_db")), number_or_nan(j.at("max_rel_err")), number_or_nan(j.at("max_abs_err")),
          j.at("nonfinite").get<int64_t>()};
}

std::optional<FixExport> export_from(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  FixExport e{
      j.at("path").get<std::string>(), j.at("format").get<std::string>(), j.at("keep_io_types").get<bool>(), {}};
  e.result.nodes_in_target = j.at("nodes_in_target").get<int64_t>();
  e.result.nodes_in_fp32 = j.at("nodes_in_fp32").get<int64_t>();
  e.result.casts_inserted = j.at("casts_inserted").get<int64_t>();
  e.result.initializers_converted = j.at("initializers_converted").get<int64_t>();
  for (const nlohmann::json& i : j.at("initializers_kept_fp32"))
    e.result.initializers_kept_fp32.push_back({i.at("name").get<std::string>(), i.at("reason").get<std::string>(),
                                               i.at("elements").get<int64_t>(),
                                               i.at("consumers").get<std::vector<std::string>>()});
  for (const nlohmann::json& n : j.at("nodes_kept_fp32"))
    e.result.nodes_kept_fp32.push_back(
        {n.at("node").get<std::string>(), n.at("op_type").get<std::string>(), n.at("reason").get<std::string>()});
  return e;
}

}  // namespace

FixReport fix_report_from_json(const nlohmann::json& j) {
  if (const std::string violation = fix_schema_violation(j); !violation.empty())
    fail("not a valid mpaudit fix report: " + violation);
  FixReport r;
  r.tool_version = j.at("tool").at("version").get<std::string>();
  r.model_path = j.at("model").at("path").get<std::string>();
  r.model_sha256 = j.at("model").at("sha256").get<std::string>();
  const nlohmann::json& config = j.at("config");
  r.target = config.at("target").get<std::string>();
  r.reference = config.at("reference").get<std::string>();
  r.inputs = config.at("inputs").get<std::string>();
  r.samples = config.at("samples").get<int64_t>();
  r.gates = config.at("gates").get<std::vector<std::string>>();
  r.forced_fp32 = config.at("forced_fp32").get<std::vector<std::string>>();
  r.met = j.at("met").get<bool>();
  r.minimal = j.at("minimal").get<bool>();
  r.note = j.at("note").get<std::string>();
  for (const nlohmann::json& k : j.at("keep"))
    r.keep.push_back({k.at("node").get<std::string>(), k.at("op_type").get<std::string>(),
                      k.at("outputs").get<std::vector<std::string>>(), k.at("audit_verdict").get<std::string>(),
                      k.at("audit_reasons").get<std::vector<std::string>>(), gate_values_from(k.at("needed_because")),
                      k.value("needed_samples", int64_t{0})});
  r.before = gate_values_from(j.at("before"));
  r.after = gate_values_from(j.at("after"));
  for (const nlohmann::json& t : j.at("trials"))
    r.trials.push_back({t.at("purpose").get<std::string>(), t.at("kept").get<int64_t>(), t.at("pass").get<bool>(),
                        t.at("run_equivalents").get<double>(), t.value("samples", int64_t{0})});
  for (const nlohmann::json& p : j.at("presets"))
    r.presets.push_back({p.at("name").get<std::string>(), p.at("kept").get<int64_t>(), p.at("pass").get<bool>(),
                         gate_values_from(p.at("gates"))});
  for (const nlohmann::json& n : j.value("nodes", nlohmann::json::array())) {
    FixNode node{n.at("node").get<std::string>(), n.at("op_type").get<std::string>(), n.at("kept").get<bool>(),
                 node_run_from(n.at("before")), std::nullopt};
    if (!n.at("after").is_null()) node.after = node_run_from(n.at("after"));
    r.nodes.push_back(std::move(node));
  }
  const nlohmann::json& cost = j.at("cost");
  r.audit_run_equivalents = cost.at("audit_run_equivalents").get<double>();
  r.reference_runs = cost.at("reference_runs").get<int64_t>();
  r.mixed_runs = cost.at("mixed_runs").get<int64_t>();
  r.mixed_run_equivalents = cost.at("mixed_run_equivalents").get<double>();
  r.comparison_runs = cost.at("comparison_runs").get<int64_t>();
  r.node_figure_runs = cost.value("node_figure_runs", int64_t{0});
  r.exported = export_from(j.at("export"));
  return r;
}

FixReport read_fix_report(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file_bytes(path, uint64_t{1} << 30));
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": not JSON: " + e.what());
  }
  try {
    return fix_report_from_json(j);
  } catch (const Error& e) {
    fail(path + ": " + e.what());
  }
}

}  // namespace mpa::report
