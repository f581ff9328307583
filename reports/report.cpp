#include "reports/report.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "io/npy.h"
#include "model/loader.h"
#include "reports/report_schema.h"

namespace mpa::report {

// [SECTION] Small pieces

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Safe: return "safe";
    case Verdict::Warn: return "warn";
    case Verdict::Unsafe: return "unsafe";
  }
  return "safe";
}

Verdict parse_verdict(const std::string& s) {
  if (s == "safe") return Verdict::Safe;
  if (s == "warn") return Verdict::Warn;
  if (s == "unsafe") return Verdict::Unsafe;
  fail("unknown verdict '" + s + "'");
}

json Thresholds::to_json() const {
  return {{"underflow_warn_frac", underflow_warn_frac},
          {"underflow_unsafe_frac", underflow_unsafe_frac},
          {"weight_underflow_warn_frac", weight_underflow_warn_frac},
          {"weight_underflow_unsafe_frac", weight_underflow_unsafe_frac},
          {"sqnr_warn_db", sqnr_warn_db},
          {"sqnr_unsafe_db", sqnr_unsafe_db},
          {"jump_db", jump_db},
          {"own_loss_db", own_loss_db},
          {"atol", tolerances.atol},
          {"rtol", tolerances.rtol},
          {"rel_floor", tolerances.rel_floor}};
}

Thresholds Thresholds::from_json(const json& j) {
  Thresholds t;
  t.underflow_warn_frac = j.at("underflow_warn_frac");
  t.underflow_unsafe_frac = j.at("underflow_unsafe_frac");
  t.weight_underflow_warn_frac = j.at("weight_underflow_warn_frac");
  t.weight_underflow_unsafe_frac = j.at("weight_underflow_unsafe_frac");
  t.sqnr_warn_db = j.at("sqnr_warn_db").get<std::map<std::string, double>>();
  t.sqnr_unsafe_db = j.at("sqnr_unsafe_db").get<std::map<std::string, double>>();
  t.jump_db = j.at("jump_db");
  t.own_loss_db = j.at("own_loss_db");
  t.tolerances.atol = j.at("atol");
  t.tolerances.rtol = j.at("rtol");
  t.tolerances.rel_floor = j.at("rel_floor");
  return t;
}

json Config::to_json() const {
  json j = {{"reference", reference},
            {"targets", targets},
            {"samples", samples},
            {"total_samples", total_samples},
            {"seed", seed},
            {"shard", shard.empty() ? json(nullptr) : json(shard)},
            {"sample_ranges", sample_ranges},
            {"accumulation", accumulation},
            {"tf32", tf32},
            {"profile", profile},
            {"fp8_scaling", fp8_scaling},
            {"inputs", inputs},
            {"keep_fp32", keep_fp32},
            {"timing", timing},
            {"backend", backend},
            {"isolated", isolated},
            {"thresholds", thresholds.to_json()}};
  if (device) j["device"] = {{"description", device->description}, {"numerics", device->numerics}};
  if (!input_sources.empty()) {
    json sources = json::array();
    for (const InputSource& source : input_sources) sources.push_back(source.to_json());
    j["input_sources"] = std::move(sources);
  }
  return j;
}

namespace {

// Sorted, disjoint ranges within [0, total) whose lengths add up to `samples`, else a one-line error.
void check_sample_ranges(const std::vector<std::pair<int64_t, int64_t>>& ranges, int64_t samples, int64_t total,
                         const std::string& where) {
  int64_t held = 0, previous_end = -1;
  for (const auto& [first, last] : ranges) {
    if (!(previous_end < first && first < last && last <= total))
      fail("malformed report: " + where + ".sample_ranges must be sorted, disjoint ranges within total_samples");
    held += last - first;
    previous_end = last;
  }
  if (!(held == samples))
    fail("malformed report: " + where + ".sample_ranges do not hold " + where + ".samples samples");
}

}  // namespace

json InputSource::to_json() const {
  return {{"inputs", inputs},
          {"seed", seed},
          {"samples", samples},
          {"total_samples", total_samples},
          {"sample_ranges", sample_ranges}};
}

InputSource InputSource::from_json(const json& j) {
  InputSource s;
  s.inputs = j.at("inputs");
  s.seed = j.at("seed");
  s.samples = j.at("samples");
  s.total_samples = j.at("total_samples");
  s.sample_ranges = j.at("sample_ranges").get<std::vector<std::pair<int64_t, int64_t>>>();
  check_sample_ranges(s.sample_ranges, s.samples, s.total_samples, "config.input_sources[]");
  return s;
}

std::string Config::inputs_text() const {
  if (input_sources.empty()) return inputs;
  std::string text;
  for (const InputSource& source : input_sources)
    text += (text.empty() ? "" : "; ") + source.inputs + " (" + std::to_string(source.samples) + " of " +
            std::to_string(source.total_samples) + ")";
  return text;
}

std::vector<InputSource> Config::sources() const {
  if (!input_sources.empty()) return input_sources;
  return {InputSource{inputs, seed, samples, total_samples, sample_ranges}};
}

Config Config::from_json(const json& j) {
  Config c;
  c.reference = j.at("reference");
  c.targets = j.at("targets").get<std::vector<std::string>>();
  c.samples = j.at("samples");
  c.total_samples = j.at("total_samples");
  c.seed = j.at("seed");
  c.shard = j.at("shard").is_null() ? "" : j.at("shard").get<std::string>();
  c.sample_ranges = j.at("sample_ranges").get<std::vector<std::pair<int64_t, int64_t>>>();
  check_sample_ranges(c.sample_ranges, c.samples, c.total_samples, "config");
  c.accumulation = j.at("accumulation");
  c.tf32 = j.at("tf32");
  c.profile = j.at("profile");
  c.fp8_scaling = j.at("fp8_scaling");
  c.inputs = j.at("inputs");
  c.keep_fp32 = j.at("keep_fp32").get<std::vector<std::string>>();
  c.timing = j.at("timing");
  c.backend = j.value("backend", "cpu");  // absent before schema 3: the CPU ran everything
  c.isolated = j.value("isolated", "all");  // absent before schema 4: every node was run alone
  c.thresholds = Thresholds::from_json(j.at("thresholds"));
  if (j.contains("device"))
    c.device = Device{j.at("device").at("description"),
                      j.at("device").at("numerics").get<std::map<std::string, std::map<std::string, std::string>>>()};
  if (j.contains("input_sources")) {
    int64_t samples = 0;
    for (const json& source : j.at("input_sources")) {
      c.input_sources.push_back(InputSource::from_json(source));
      samples += c.input_sources.back().samples;
    }
    if (!(c.input_sources.size() >= 2 && samples == c.samples))
      fail(
          "malformed report: config.input_sources must list two or more sources whose samples add up to "
          "config.samples");
  }
  return c;
}

double headroom_bits(const Config& config, Format format, double absmax) {
  if (absmax_scaled(format, config.fp8_scaling == "absmax")) return absmax > 0 ? 0.0 : std::nan("");
  return probes::FormatFit::headroom_bits(format, absmax);
}

void Consequence::merge(const Consequence& o) {
  traced += o.traced;
  absorbed += o.absorbed;
  cut += o.cut;
  std::vector<std::string> names;
  std::set_union(absorbed_by.begin(), absorbed_by.end(), o.absorbed_by.begin(), o.absorbed_by.end(),
                 std::back_inserter(names));
  absorbed_by = std::move(names);
  if (o.harm_at_index >= 0 && (harm_at_index < 0 || o.harm_at_index < harm_at_index)) {
    harm_at_index = o.harm_at_index;
    harm_at = o.harm_at;
  }
  for (const auto& [name, d] : o.outputs) outputs[name].merge(d);
}

json Consequence::to_json() const {
  json reached = json::object();
  for (const auto& [name, d] : outputs) reached[name] = d.to_json();
  return {{"traced", traced},
          {"absorbed", absorbed},
          {"cut", cut},
          {"absorbed_by", absorbed_by},
          {"harm_at", harm_at_index < 0 ? json(nullptr) : json{{"index", harm_at_index}, {"name", harm_at}}},
          {"outputs", reached}};
}

Consequence Consequence::from_json(const json& j) {
  Consequence c;
  c.traced = j.at("traced");
  c.absorbed = j.at("absorbed");
  c.cut = j.at("cut");
  if (!(c.traced >= 0 && c.absorbed >= 0 && c.cut >= 0 && c.absorbed + c.cut <= c.traced))
    fail("malformed report: a consequence's absorbed and cut traces exceed the traced ones");
  c.absorbed_by = j.at("absorbed_by").get<std::vector<std::string>>();
  std::sort(c.absorbed_by.begin(), c.absorbed_by.end());
  c.absorbed_by.erase(std::unique(c.absorbed_by.begin(), c.absorbed_by.end()), c.absorbed_by.end());
  if (!j.at("harm_at").is_null()) {
    c.harm_at_index = j.at("harm_at").at("index");
    c.harm_at = j.at("harm_at").at("name");
  }
  for (const auto& [name, d] : j.at("outputs").items()) c.outputs[name] = probes::Divergence::from_json(d);
  return c;
}

// [SECTION] Writer

namespace {

json divergence_json(const probes::Divergence& d) { return d.to_json(); }

json tensor_json(const TensorStats& t, const Config& config) {
  json j;
  j["name"] = t.name;
  j["shape"] = t.shape;
  j["dtype"] = t.dtype;
  if (!t.measured) return j;
  json ref = t.range.to_json();
  ref["exp_hist"] = t.hist.to_json();
  j["reference"] = std::move(ref);
  json targets = json::object();
  for (const auto& [fmt, s] : t.targets) {
    const Format format = *parse_format(fmt);
    // The fit's own serialisation, which the reader parses back with FormatFit::from_json.
    json target = s.fit.to_json();
    target["headroom_bits"] = probes::number_or_null(headroom_bits(config, format, t.range.absmax()));
    target["propagated"] = divergence_json(s.propagated);
    target["propagated_exp_hist"] = s.propagated_hist.to_json();
    target["isolated"] = divergence_json(s.isolated);
    target["stored"] = divergence_json(s.stored);
    if (s.consequence.traced > 0) target["consequence"] = s.consequence.to_json();
    targets[fmt] = std::move(target);
  }
  j["targets"] = std::move(targets);
  return j;
}

json summary_json(const TargetSummary& s) {
  json outputs = json::array();
  for (const OutputSummary& o : s.outputs)
    outputs.push_back({{"name", o.name},
                       {"max_abs_err", probes::number_or_null(o.max_abs_err)},
                       {"max_rel_err", probes::number_or_null(o.max_rel_err)},
                       {"cosine", probes::number_or_null(o.cosine)},
                       {"sqnr_db", probes::number_or_null(o.sqnr_db)}});
  return {{"verdict", s.pass ? "pass" : "fail"},
          {"unsafe_nodes", s.unsafe_nodes},
          {"warn_nodes", s.warn_nodes},
          {"first_unsafe", s.first_unsafe.empty() ? json(nullptr) : json(s.first_unsafe)},
          {"first_error_jump", s.first_error_jump.empty() ? json(nullptr) : json(s.first_error_jump)},
          {"culprits", s.culprits},
          {"keep_fp32", s.keep_fp32},
          {"advice",
           {{"verified", s.advice.verified},
            {"rounds", s.advice.rounds},
            {"note", s.advice.note.empty() ? json(nullptr) : json(s.advice.note)}}},
          {"outputs", outputs}};
}

}  // namespace

json to_json(const Report& r) {
  json j;
  j["schema"] = kSchema;
  j["tool"] = {{"name", "mpaudit"}, {"version", r.tool_version}};
  j["model"] = {{"path", r.model_path}, {"sha256", r.model_sha256}, {"opset", r.opset}, {"node_count", r.nodes.size()}};
  j["config"] = r.config.to_json();
  j["exp_hist_layout"] = probes::ExpHistogram::layout();
  json summary = json::object();
  for (const auto& [fmt, s] : r.summary) summary[fmt] = summary_json(s);
  int64_t fallback_nodes = 0;
  for (const NodeStats& n : r.nodes) fallback_nodes += !n.fallbacks.empty();
  j["summary"] = {{"targets", summary}};
  j["placement"] = {{"backend", r.config.backend},
                    {"fallback_nodes", fallback_nodes},
                    {"uploads", r.transfers.uploads},
                    {"downloads", r.transfers.downloads},
                    {"bytes_uploaded", r.transfers.bytes_uploaded},
                    {"bytes_downloaded", r.transfers.bytes_downloaded}};
  json inputs = json::array();
  for (const TensorStats& t : r.inputs) inputs.push_back(tensor_json(t, r.config));
  j["inputs"] = std::move(inputs);
  json nodes = json::array();
  for (const NodeStats& n : r.nodes) {
    json node;
    node["index"] = n.index;
    node["name"] = n.name;
    node["op_type"] = n.op_type;
    node["op_class"] = n.op_class.empty() ? json(nullptr) : json(n.op_class);
    node["sums_in"] = n.sums_in.empty() ? json(nullptr) : json(n.sums_in);
    node["scope"] = n.scope.empty() ? json(nullptr) : json(n.scope);
    node["executions"] = n.executions;
    node["inputs"] = n.inputs;
    node["outputs"] = n.outputs;
    json targets = json::object();
    for (const auto& [fmt, t] : n.targets) {
      json reasons = json::array();
      for (const Reason& reason : t.reasons)
        reasons.push_back({{"code", reason.code}, {"level", verdict_name(reason.level)}, {"message", reason.message}});
      targets[fmt] = {{"verdict", verdict_name(t.verdict)},
                      {"reasons", reasons},
                      {"propagated_jump_db", probes::number_or_null(t.propagated_jump_db)},
                      {"kept_fp32", t.kept_fp32},
                      {"consequence", t.consequence.empty() ? json(nullptr) : json(t.consequence)},
                      {"harm_at", t.harm_at.empty() ? json(nullptr) : json(t.harm_at)},
                      {"roots", t.roots}};
      if (t.isolated_skipped > 0) targets[fmt]["isolated_skipped"] = t.isolated_skipped;
    }
    node["targets"] = targets;
    json tensors = json::array();
    for (const TensorStats& t : n.tensors) tensors.push_back(tensor_json(t, r.config));
    node["tensors"] = tensors;
    json weights = json::array();
    for (const WeightStats& w : n.weights) {
      json wt = json::object();
      for (const auto& [fmt, fit] : w.targets) wt[fmt] = fit.to_json();
      weights.push_back({{"name", w.name}, {"count", w.count}, {"targets", wt}});
    }
    node["weights"] = weights;
    node["time_ms"] = r.config.timing && r.config.samples > 0
                          ? json(n.time_ms_total / static_cast<double>(r.config.samples))
                          : json(nullptr);
    node["device_time_ms"] = r.config.timing && r.config.samples > 0 && n.device_time_ms_total
                                 ? json(*n.device_time_ms_total / static_cast<double>(r.config.samples))
                                 : json(nullptr);
    node["state"] = {{"time_ms_total", n.time_ms_total},
                     {"device_time_ms_total", n.device_time_ms_total ? json(*n.device_time_ms_total) : json(nullptr)}};
    if (!n.fallbacks.empty()) node["fallbacks"] = n.fallbacks;
    nodes.push_back(std::move(node));
  }
  j["nodes"] = std::move(nodes);
  return j;
}

// [SECTION] Reader

namespace {

// Every per-format entry the readers index by config.targets is there (the schema says so; a reader
// must not take it on trust).
void require_every_target(const Report& r) {
  for (const std::string& fmt : r.config.targets) {
    auto missing = [&](const std::string& where) {
      fail("malformed report: " + where + " has no '" + fmt + "' entry");
    };
    if (!r.summary.count(fmt)) missing("summary.targets");
    auto check_tensors = [&](const std::vector<TensorStats>& tensors, const std::string& where) {
      for (const TensorStats& t : tensors)
        if (t.measured && !t.targets.count(fmt)) missing(where + " tensor '" + t.name + "'");
    };
    check_tensors(r.inputs, "inputs:");
    for (const NodeStats& n : r.nodes) {
      if (!n.targets.count(fmt)) missing("node '" + n.name + "'");
      check_tensors(n.tensors, "node '" + n.name + "'");
      for (const WeightStats& w : n.weights)
        if (!w.targets.count(fmt)) missing("node '" + n.name + "' weight '" + w.name + "'");
    }
  }
}

TensorStats tensor_from_json(const json& t) {
  TensorStats ts;
  ts.name = t.at("name");
  ts.shape = t.at("shape").get<Shape>();
  ts.dtype = t.at("dtype");
  ts.measured = t.contains("reference");
  if (!ts.measured) return ts;
  ts.range = probes::RangeProbe::from_json(t.at("reference"));
  ts.hist = probes::ExpHistogram::from_json(t.at("reference").at("exp_hist"));
  for (const auto& [fmt, s] : t.at("targets").items()) {
    TensorTarget tt;
    tt.fit = probes::FormatFit::from_json(s);
    tt.propagated = probes::Divergence::from_json(s.at("propagated"));
    tt.isolated = probes::Divergence::from_json(s.at("isolated"));
    tt.stored = probes::Divergence::from_json(s.at("stored"));
    tt.propagated_hist = probes::ExpHistogram::from_json(s.at("propagated_exp_hist"));
    if (s.contains("consequence")) tt.consequence = Consequence::from_json(s.at("consequence"));
    ts.targets[fmt] = std::move(tt);
  }
  return ts;
}

}  // namespace

Report from_json(const json& j) {
  try {
    const std::string schema = j.value("schema", "");
    if (!(schema == kSchema || schema == kSchemaV3 || schema == kSchemaV2 || schema == kSchemaV1))
      fail("not an mpaudit report (schema '" + schema + "', expected '" + kSchema + "')");
    const bool v1 = schema == kSchemaV1;
    Report r;
    r.tool_version = j.at("tool").at("version");
    r.model_path = j.at("model").at("path");
    r.model_sha256 = j.at("model").at("sha256");
    r.opset = j.at("model").at("opset");
    r.config = Config::from_json(j.at("config"));
    for (const auto& [fmt, s] : j.at("summary").at("targets").items()) {
      TargetSummary t;
      t.pass = s.at("verdict") == "pass";
      t.unsafe_nodes = s.at("unsafe_nodes").get<std::vector<std::string>>();
      t.warn_nodes = s.at("warn_nodes").get<std::vector<std::string>>();
      t.keep_fp32 = s.at("keep_fp32").get<std::vector<std::string>>();
      t.culprits = s.at("culprits").get<std::vector<std::string>>();
      t.first_unsafe = s.at("first_unsafe").is_null() ? "" : s.at("first_unsafe").get<std::string>();
      t.first_error_jump = s.at("first_error_jump").is_null() ? "" : s.at("first_error_jump").get<std::string>();
      if (!v1) {
        const json& advice = s.at("advice");
        t.advice.verified = advice.at("verified");
        t.advice.rounds = advice.at("rounds");
        t.advice.note = advice.at("note").is_null() ? "" : advice.at("note").get<std::string>();
      }
      for (const json& o : s.at("outputs"))
        t.outputs.push_back({o.at("name"), probes::number_from(o.at("max_abs_err")),
                             probes::number_from(o.at("max_rel_err")), probes::number_from(o.at("cosine")),
                             probes::number_from(o.at("sqnr_db"))});
      r.summary[fmt] = std::move(t);
    }
    if (j.contains("placement")) {
      const json& p = j.at("placement");
      r.transfers = {p.at("uploads"), p.at("downloads"), p.at("bytes_uploaded"), p.at("bytes_downloaded")};
    }
    for (const json& t : j.at("inputs")) r.inputs.push_back(tensor_from_json(t));
    for (const json& n : j.at("nodes")) {
      NodeStats node;
      node.index = n.at("index");
      node.name = n.at("name");
      node.op_type = n.at("op_type");
      if (n.contains("op_class") && !n.at("op_class").is_null()) node.op_class = n.at("op_class");
      if (n.contains("sums_in") && !n.at("sums_in").is_null()) node.sums_in = n.at("sums_in");
      node.scope = n.at("scope").is_null() ? "" : n.at("scope").get<std::string>();
      node.executions = n.at("executions");
      node.inputs = n.at("inputs").get<std::vector<std::string>>();
      node.outputs = n.at("outputs").get<std::vector<std::string>>();
      node.time_ms_total = n.at("state").at("time_ms_total");
      if (const json& device = n.at("state").value("device_time_ms_total", json(nullptr)); !device.is_null())
        node.device_time_ms_total = device.get<double>();
      if (n.contains("fallbacks")) node.fallbacks = n.at("fallbacks").get<std::map<std::string, std::string>>();
      for (const auto& [fmt, t] : n.at("targets").items()) {
        NodeTarget target;
        target.verdict = parse_verdict(t.at("verdict"));
        target.propagated_jump_db = probes::number_from(t.at("propagated_jump_db"));
        target.kept_fp32 = t.at("kept_fp32");
        target.isolated_skipped = t.value("isolated_skipped", int64_t{0});
        if (!v1) {
          target.consequence = t.at("consequence").is_null() ? "" : t.at("consequence").get<std::string>();
          target.harm_at = t.at("harm_at").is_null() ? "" : t.at("harm_at").get<std::string>();
          target.roots = t.at("roots").get<std::vector<std::string>>();
        }
        for (const json& reason : t.at("reasons"))
          target.reasons.push_back({reason.at("code"), parse_verdict(reason.at("level")), reason.at("message")});
        node.targets[fmt] = std::move(target);
      }
      for (const json& t : n.at("tensors")) node.tensors.push_back(tensor_from_json(t));
      for (const json& w : n.at("weights")) {
        WeightStats ws;
        ws.name = w.at("name");
        ws.count = w.at("count");
        for (const auto& [fmt, fit] : w.at("targets").items()) ws.targets[fmt] = probes::FormatFit::from_json(fit);
        node.weights.push_back(std::move(ws));
      }
      r.nodes.push_back(std::move(node));
    }
    require_every_target(r);
    return r;
  } catch (const json::exception& e) {
    fail(std::string("malformed report: ") + e.what());
  }
}

// Names from the model are bytes, not always UTF-8: invalid sequences are written as U+FFFD.
std::string serialize(const Report& report) {
  return to_json(report).dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Report read_report(const std::string& path, bool check_schema) {
  return parse_report(read_file_bytes(path, uint64_t{4} << 30), path, check_schema);
}

Report parse_report(const std::string& text, const std::string& what, bool check_schema) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(what + ": not JSON: " + e.what());
  }
  // A report of the current schema is checked against it first, so that a corrupt one is refused naming the
  // field (a count of 2^64 - 1, negative or fractional) instead of being merged into wrong figures.
  // (`schema` compared as a value: any JSON type may stand there, and only the string kSchema is checked.)
  if (check_schema && j.is_object() && j.contains("schema") && j.at("schema") == kSchema)
    if (const std::string violation = schema_violation(j); !violation.empty())
      fail(what + ": not a valid mpaudit report: " + violation);
  try {
    return from_json(j);
  } catch (const Error& e) {
    fail(what + ": " + e.what());
  }
}

std::vector<std::string> graph_outputs(const Report& report) {
  std::vector<std::string> outputs;
  for (const auto& s : report.summary)
    for (const auto& o : s.second.outputs)
      if (std::find(outputs.begin(), outputs.end(), o.name) == outputs.end()) outputs.push_back(o.name);
  return outputs;
}

void write_report(const std::string& path, const Report& report) { write_file_atomic(path, serialize(report)); }

// [SECTION] Merge

Shape merged_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return Shape(std::max(a.size(), b.size()), -1);
  Shape merged(a);
  for (size_t d = 0; d < a.size(); ++d)
    if (a[d] != b[d]) merged[d] = -1;
  return merged;
}

namespace {

// The union of two reports' sample ranges, adjacent ranges joined; fails where they share a sample (a
// shard given twice, a whole-set report with a shard): the merged sums would count it twice.
std::vector<std::pair<int64_t, int64_t>> join_sample_ranges(const std::vector<std::pair<int64_t, int64_t>>& a,
                                                            const std::vector<std::pair<int64_t, int64_t>>& b) {
  std::vector<std::pair<int64_t, int64_t>> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  std::vector<std::pair<int64_t, int64_t>> joined;
  for (const auto& [first, last] : all) {
    if (!joined.empty() && first < joined.back().second)
      fail("reports both hold samples " + std::to_string(first) + ".." +
           std::to_string(std::min(last, joined.back().second) - 1) + ": some samples are in more than one report");
    if (!joined.empty() && first == joined.back().second)
      joined.back().second = last;
    else
      joined.emplace_back(first, last);
  }
  return joined;
}

// Joins b's samples into a: per input source, the sample ranges (a source's samples counted once); sources
// new to a are added. Sources are kept sorted, so that the order of the reports merged does not matter.
void join_input_sources(Config& a, const Config& b) {
  std::vector<InputSource> sources = a.sources();
  for (const InputSource& source : b.sources()) {
    auto same = std::find_if(sources.begin(), sources.end(),
                             [&](const InputSource& s) { return s.inputs == source.inputs && s.seed == source.seed; });
    if (same == sources.end()) {
      sources.push_back(source);
      continue;
    }
    if (!(same->total_samples == source.total_samples))
      fail("reports were made with different settings: config.total_samples of the inputs '" + source.inputs + "' is " +
           std::to_string(same->total_samples) + " in one and " + std::to_string(source.total_samples) +
           " in the other");
    same->sample_ranges = join_sample_ranges(same->sample_ranges, source.sample_ranges);
    same->samples += source.samples;
  }
  std::sort(sources.begin(), sources.end(), [](const InputSource& x, const InputSource& y) {
    return std::tie(x.inputs, x.seed) < std::tie(y.inputs, y.seed);
  });
  a.input_sources.clear();
  if (sources.size() == 1) {
    a.samples = sources[0].samples;
    a.total_samples = sources[0].total_samples;
    a.sample_ranges = sources[0].sample_ranges;
    return;
  }
  a.inputs = std::to_string(sources.size()) + " input sources (config.input_sources)";
  a.seed = sources[0].seed;
  a.samples = a.total_samples = 0;
  a.sample_ranges.clear();
  for (const InputSource& source : sources) {
    for (const auto& [first, last] : source.sample_ranges)
      a.sample_ranges.emplace_back(a.total_samples + first, a.total_samples + last);
    a.samples += source.samples;
    a.total_samples += source.total_samples;
  }
  a.sample_ranges = join_sample_ranges(a.sample_ranges, {});
  a.input_sources = std::move(sources);
}

void merge_tensors(std::vector<TensorStats>& a, const std::vector<TensorStats>& b, const std::string& where) {
  if (!(a.size() == b.size())) fail("reports differ at " + where);
  for (size_t k = 0; k < a.size(); ++k) {
    TensorStats& x = a[k];
    const TensorStats& y = b[k];
    if (!(x.name == y.name)) fail("reports differ at " + where);
    x.shape = merged_shape(x.shape, y.shape);
    if (!x.measured || !y.measured) continue;
    x.range.merge(y.range);
    x.hist.merge(y.hist);
    for (auto& [fmt, t] : x.targets) {
      const TensorTarget& u = y.targets.at(fmt);
      t.fit.merge(u.fit);
      t.propagated_hist.merge(u.propagated_hist);
      t.propagated.merge(u.propagated);
      t.isolated.merge(u.isolated);
      t.stored.merge(u.stored);
      t.consequence.merge(u.consequence);
    }
  }
}

}  // namespace

void Report::merge(const Report& o) {
  if (!(model_sha256 == o.model_sha256))
    fail("reports are of different models (sha256 " + model_sha256.substr(0, 12) + " vs " +
         o.model_sha256.substr(0, 12) + ")");
  // What was fed may differ (the samples are joined below); every setting that changes numbers may not.
  json mine = config.to_json(), theirs = o.config.to_json();
  for (const char* key : {"samples", "total_samples", "shard", "sample_ranges", "inputs", "seed", "input_sources"}) {
    mine.erase(key);
    theirs.erase(key);
  }
  for (const auto& [key, value] : mine.items())
    if (!(theirs.contains(key) && theirs.at(key) == value))
      fail("reports were made with different settings: config." + key + " is " + value.dump() + " in one and " +
           (theirs.contains(key) ? theirs.at(key).dump() : "absent") + " in the other");
  require(nodes.size() == o.nodes.size(), "reports differ in node count");
  join_input_sources(config, o.config);
  // Graph inputs are measured with every sample: a report of none has no entries yet.
  if (inputs.empty())
    inputs = o.inputs;
  else if (!o.inputs.empty())
    merge_tensors(inputs, o.inputs, "the graph inputs");
  config.shard = config.samples == config.total_samples ? "" : "partial";
  transfers.uploads += o.transfers.uploads;
  transfers.downloads += o.transfers.downloads;
  transfers.bytes_uploaded += o.transfers.bytes_uploaded;
  transfers.bytes_downloaded += o.transfers.bytes_downloaded;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeStats& a = nodes[i];
    const NodeStats& b = o.nodes[i];
    if (!(a.name == b.name)) fail("reports differ at node " + a.name);
    a.time_ms_total += b.time_ms_total;
    if (b.device_time_ms_total) a.device_time_ms_total = a.device_time_ms_total.value_or(0) + *b.device_time_ms_total;
    a.executions += b.executions;
    a.fallbacks.insert(b.fallbacks.begin(), b.fallbacks.end());
    for (const auto& [fmt, t] : b.targets) a.targets[fmt].isolated_skipped += t.isolated_skipped;
    if (a.op_class.empty()) {  // a report of schema 1 or 2 merged with a newer one
      a.op_class = b.op_class;
      a.sums_in = b.sums_in;
    }
    // A node inside a branch or loop may have run on one report's samples only.
    if (b.tensors.empty()) continue;
    if (a.tensors.empty()) {
      a.tensors = b.tensors;
      continue;
    }
    merge_tensors(a.tensors, b.tensors, "node " + a.name);
  }
}

}  // namespace mpa::report
