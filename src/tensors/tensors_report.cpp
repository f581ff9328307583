#include "tensors/tensors_report.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include "common/gate_comparison.h"

namespace mpa::tensors {

using json = nlohmann::ordered_json;
using probes::number_or_null;

namespace {

// [SECTION] Report

double fraction_of(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

json optional_int(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }

json window_json(const ScaleWindow& w) {
  return {{"lo_log2", optional_int(w.lo_log2)},
          {"hi_log2", optional_int(w.hi_log2)},
          {"empty", w.empty},
          {"reason", w.reason},
          {"flush_frac_at_hi", number_or_null(w.flush_fraction_at_hi)}};
}

json format_json(const FormatFigures& f) {
  const int64_t nonzero = f.fit.nonzero;
  return {{"fit", f.fit.to_json()},
          {"overflow_frac", fraction_of(f.fit.overflow, nonzero)},
          {"flush_to_zero_frac", fraction_of(f.fit.flush_to_zero, nonzero)},
          {"significant_flush_frac", fraction_of(f.fit.significant_flush, nonzero)},
          {"subnormal_frac", fraction_of(f.fit.subnormal, nonzero)},
          {"headroom_bits", number_or_null(f.headroom_bits)},
          {"scale_window", window_json(f.window)}};
}

json tensor_json(const TensorRecord& t) {
  json j = {{"name", t.name},
            {"source", t.source},
            {"role", role_name(t.role)},
            {"dtype", dtype_name(t.stats.dtype)},
            {"shape", t.stats.shape},
            {"kind", t.stats.floating ? "float" : "integer"}};
  if (!t.stats.floating) {
    j["count"] = t.stats.range.count;
    return j;
  }
  json range = t.stats.range.to_json();
  range["exp_hist"] = t.stats.histogram.to_json();
  j["range"] = std::move(range);
  json formats = json::object();
  for (const FormatFigures& f : t.stats.formats) formats[std::string(format_name(f.format))] = format_json(f);
  j["formats"] = std::move(formats);
  return j;
}

json loss_scale_json(const TensorAudit& audit) {
  if (audit.gradient_count == 0) return nullptr;
  const LossScaleOptions& o = audit.options.loss_scale;
  const StaticScale& s = audit.static_scale;
  json trajectory = json::array();
  for (const DynamicStep& step : audit.dynamic_scale.steps)
    trajectory.push_back({{"step", step.step},
                          {"scale_log2", step.scale_log2},
                          {"skipped", step.skipped},
                          {"reason", step.reason},
                          {"overflowing", step.overflowing},
                          {"flush_frac", number_or_null(step.flush_fraction)},
                          {"next_scale_log2", step.next_scale_log2}});
  return {{"format", format_name(o.format)},
          {"gradients", audit.gradient_count},
          {"static",
           {{"scale_log2", optional_int(s.scale_log2)},
            {"scale", s.scale_log2 ? json(std::ldexp(1.0, *s.scale_log2)) : json(nullptr)},
            {"limited_by", s.limited_by},
            {"headroom_bits", number_or_null(s.headroom_bits)},
            {"flush_frac", number_or_null(s.flush_fraction)},
            {"window", window_json(s.window)},
            {"nonfinite_gradients", s.nonfinite_gradients},
            {"reason", s.reason}}},
          {"dynamic",
           {{"skipped_steps", audit.dynamic_scale.skipped},
            {"final_scale_log2", audit.dynamic_scale.final_scale_log2},
            {"trajectory", std::move(trajectory)}}}};
}

json master_json(const MasterRecord& m) {
  json formats = json::object();
  for (size_t k = 0; k < std::size(kMasterWeightFormats); ++k)
    formats[std::string(format_name(kMasterWeightFormats[k]))] = {
        {"vanished", m.figures.vanished[k]}, {"vanished_frac", fraction_of(m.figures.vanished[k], m.figures.updated)}};
  return {{"step", m.step},
          {"weight", m.weight},
          {"update", m.update},
          {"elements", m.figures.elements},
          {"nonfinite", m.figures.nonfinite},
          {"updated", m.figures.updated},
          {"zero_weight", m.figures.zero_weight},
          {"formats", std::move(formats)},
          {"ratio_hist", m.figures.ratio.to_json()}};
}

json config_json(const TensorAuditOptions& o) {
  json targets = json::array();
  for (Format f : o.targets) targets.push_back(format_name(f));
  json master = json::array();
  for (const MasterPairing& p : o.master) master.push_back(p.weight_pattern + "=" + p.update_pattern);
  const LossScaleOptions& l = o.loss_scale;
  return {{"targets", std::move(targets)},
          {"max_flush_frac", o.max_flush_fraction},
          {"gradient_patterns", o.gradient_patterns},
          {"master", std::move(master)},
          {"learning_rate", o.learning_rate ? json(*o.learning_rate) : json(nullptr)},
          {"loss_scale",
           {{"format", format_name(l.format)},
            {"initial_scale", std::ldexp(1.0, l.initial_log2)},
            {"growth_factor", std::ldexp(1.0, l.growth_log2)},
            {"backoff_factor", std::ldexp(1.0, l.backoff_log2)},
            {"growth_interval", l.growth_interval},
            {"hysteresis", l.hysteresis}}}};
}

// [SECTION] Gates

const char* const kPerTargetMetrics[] = {
    "overflow",           "flush_to_zero",          "significant_flush", "subnormal",    "overflow_frac",
    "flush_to_zero_frac", "significant_flush_frac", "subnormal_frac",    "empty_windows"};
const char* const kGlobalMetrics[] = {"nonfinite", "skipped_steps"};
const char* const kMasterMetric = "vanished_frac";

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& name) {
  return std::find_if(std::begin(names), std::end(names), [&](const char* n) { return name == n; }) != std::end(names);
}

struct TensorGate {
  std::string expression, target, metric, op;
  double limit = 0;
};

TensorGate parse_tensor_gate(const std::string& expr, const TensorAuditOptions& options) {
  static const std::regex grammar(std::string(R"(^\s*(?:([a-z0-9]+)\.)?([a-z_]+)\s*()") + kGateOperators +
                                  R"()\s*(\S+)\s*$)");
  if (!(expr.size() <= 1000))
    fail("--fail-on: an expression of " + std::to_string(expr.size()) + " characters (1000 at most)");
  std::smatch m;
  if (!(std::regex_match(expr, m, grammar)))
    fail("--fail-on '" + expr + "': expected [TARGET.]METRIC OP NUMBER, e.g. fp16.flush_to_zero_frac>0.01");
  TensorGate g{expr, m[1], m[2], m[3], parse_gate_limit(m[4], expr)};
  const bool per_target = listed(kPerTargetMetrics, g.metric), master = g.metric == kMasterMetric;
  if (!(per_target || master || listed(kGlobalMetrics, g.metric)))
    fail("--fail-on '" + expr + "': unknown metric '" + g.metric +
         "' (overflow, flush_to_zero, significant_flush, subnormal and their _frac, empty_windows, vanished_frac, "
         "nonfinite, skipped_steps)");
  if (!g.target.empty()) {
    const auto format = parse_format(g.target);
    if (!(format.has_value())) fail("--fail-on '" + expr + "': unknown target '" + g.target + "'");
    g.target = format_name(*format);
    if (!(per_target || master)) fail("--fail-on '" + expr + "': " + g.metric + " takes no target");
    const bool known =
        master ? std::any_of(std::begin(kMasterWeightFormats), std::end(kMasterWeightFormats),
                             [&](Format f) { return *format == f; })
               : std::find(options.targets.begin(), options.targets.end(), *format) != options.targets.end();
    if (!known) fail("--fail-on '" + expr + "': target '" + g.target + "' is not audited");
  }
  if (master && options.master.empty()) fail("--fail-on '" + expr + "': vanished_frac needs --master");
  return g;
}

// The worst value of a per-target metric over every tensor, with where it is.
std::pair<double, std::string> worst_over_tensors(const TensorAudit& audit, Format target, const std::string& metric) {
  double worst = 0;
  std::string where;
  for (const StepRecord& step : audit.steps)
    for (const TensorRecord& t : step.tensors)
      for (const FormatFigures& f : t.stats.formats) {
        if (f.format != target) continue;
        const int64_t nonzero = f.fit.nonzero;
        double v = 0;
        if (metric == "overflow")
          v = static_cast<double>(f.fit.overflow);
        else if (metric == "flush_to_zero")
          v = static_cast<double>(f.fit.flush_to_zero);
        else if (metric == "significant_flush")
          v = static_cast<double>(f.fit.significant_flush);
        else if (metric == "subnormal")
          v = static_cast<double>(f.fit.subnormal);
        else if (metric == "overflow_frac")
          v = fraction_of(f.fit.overflow, nonzero);
        else if (metric == "flush_to_zero_frac")
          v = fraction_of(f.fit.flush_to_zero, nonzero);
        else if (metric == "significant_flush_frac")
          v = fraction_of(f.fit.significant_flush, nonzero);
        else if (metric == "subnormal_frac")
          v = fraction_of(f.fit.subnormal, nonzero);
        if (where.empty() || v > worst) {
          worst = v;
          where = step.name + "/" + t.name;
        }
      }
  return {worst, where};
}

int64_t empty_windows(const TensorAudit& audit, Format target) {
  int64_t count = 0;
  for (const StepRecord& step : audit.steps)
    for (const TensorRecord& t : step.tensors)
      for (const FormatFigures& f : t.stats.formats) count += f.format == target && f.window.empty;
  return count;
}

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

}  // namespace

json tensors_report_json(const TensorAudit& audit, const std::vector<GateResult>& gates) {
  json steps = json::array();
  for (const StepRecord& step : audit.steps) {
    json tensors = json::array();
    for (const TensorRecord& t : step.tensors) tensors.push_back(tensor_json(t));
    steps.push_back({{"name", step.name}, {"tensors", std::move(tensors)}});
  }
  json master = json::array();
  for (const MasterRecord& m : audit.master) master.push_back(master_json(m));
  json gate_list = json::array();
  for (const GateResult& g : gates)
    gate_list.push_back({{"expression", g.expression}, {"failed", g.failed}, {"detail", g.detail}});
  return {{"schema", kTensorsSchema},
          {"tool", {{"name", "mpaudit"}, {"version", MPA_VERSION}}},
          {"config", config_json(audit.options)},
          {"exp_hist_layout", probes::ExpHistogram::layout()},
          {"steps", std::move(steps)},
          {"loss_scale", loss_scale_json(audit)},
          {"master_weights", std::move(master)},
          {"gates", std::move(gate_list)}};
}

void check_tensor_gates(const std::vector<std::string>& expressions, const TensorAuditOptions& options) {
  for (const std::string& expr : expressions) parse_tensor_gate(expr, options);
}

std::vector<GateResult> evaluate_tensor_gates(const TensorAudit& audit, const std::vector<std::string>& expressions) {
  std::vector<GateResult> results;
  for (const std::string& expr : expressions) {
    const TensorGate g = parse_tensor_gate(expr, audit.options);
    GateResult result{expr, false, ""};
    auto judge = [&](const std::string& label, double value, const std::string& where) {
      if (!gate_comparison_holds(value, g.op, g.limit)) return;
      result.failed = true;
      if (!result.detail.empty()) result.detail += "; ";
      result.detail += label + g.metric + " = " + number_text(value) + " " + g.op + " " + number_text(g.limit) +
                       (where.empty() ? "" : " (" + where + ")");
    };
    if (listed(kPerTargetMetrics, g.metric)) {
      for (Format target : audit.options.targets) {
        const std::string name(format_name(target));
        if (!g.target.empty() && name != g.target) continue;
        if (g.metric == "empty_windows")
          judge(name + ": ", static_cast<double>(empty_windows(audit, target)), "");
        else {
          const auto [value, where] = worst_over_tensors(audit, target, g.metric);
          judge(name + ": ", value, where);
        }
      }
    } else if (g.metric == kMasterMetric) {
      for (size_t k = 0; k < std::size(kMasterWeightFormats); ++k) {
        const std::string name(format_name(kMasterWeightFormats[k]));
        if (!g.target.empty() && name != g.target) continue;
        double worst = 0;
        std::string where;
        for (const MasterRecord& m : audit.master) {
          const double v = fraction_of(m.figures.vanished[k], m.figures.updated);
          if (where.empty() || v > worst) {
            worst = v;
            where = m.step + "/" + m.weight;
          }
        }
        judge(name + ": ", worst, where);
      }
    } else if (g.metric == "nonfinite") {
      int64_t count = 0;
      for (const StepRecord& step : audit.steps)
        for (const TensorRecord& t : step.tensors) count += t.stats.nonfinite();
      judge("", static_cast<double>(count), "");
    } else {
      judge("", audit.gradient_count > 0 ? static_cast<double>(audit.dynamic_scale.skipped) : NAN,
            audit.gradient_count > 0 ? "" : "no gradients");
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace mpa::tensors
