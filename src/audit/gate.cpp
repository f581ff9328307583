#include "audit/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "common/gate_comparison.h"
#include "tensor/formats.h"

namespace mpa {

namespace {

struct Gate {
  std::string expression, target, metric, output, output_metric, op, number;
  double limit = 0;
};

const char* const kOutputMetrics[] = {"max_abs_err", "max_rel_err", "cosine", "sqnr_db"};

double output_metric(const report::OutputSummary& o, const std::string& metric) {
  if (metric == "max_abs_err") return o.max_abs_err;
  if (metric == "max_rel_err") return o.max_rel_err;
  if (metric == "cosine") return o.cosine;
  return o.sqnr_db;
}

bool lower_is_worse(const std::string& metric) { return metric == "cosine" || metric == "sqnr_db"; }

// Syntax, number and metric name; the target named as the report keys it (fp16 for float16).
Gate parse_gate(const std::string& expr) {
  static const std::regex grammar(
      R"(^\s*(?:([a-z0-9]+)\.)?(unsafe_nodes|warn_nodes|output(?:\[([^\]]+)\])?\.([a-z_]+))\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$)");
  // std::regex recurses per character: a bound keeps a hostile expression from exhausting the stack.
  if (!(expr.size() <= 1000)) fail("--fail-on: an expression of " + std::to_string(expr.size()) + " characters (1000 at most)");
  std::smatch m;
  if (!(std::regex_match(expr, m, grammar)))
    fail("--fail-on '" + expr + "': expected [TARGET.]METRIC OP NUMBER, e.g. output.max_rel_err>1e-2");
  Gate g{expr, m[1], m[2], m[3], m[4], m[5], m[6]};
  if (!g.target.empty()) {
    const auto format = parse_format(g.target);
    if (!(format.has_value())) fail("--fail-on '" + expr + "': unknown target '" + g.target + "'");
    g.target = format_name(*format);
  }
  g.limit = parse_gate_limit(g.number, expr);
  if (!g.output_metric.empty() &&
      std::find(std::begin(kOutputMetrics), std::end(kOutputMetrics), g.output_metric) == std::end(kOutputMetrics))
    fail("--fail-on '" + expr + "': unknown output metric '" + g.output_metric +
         "' (max_abs_err, max_rel_err, cosine, sqnr_db)");
  return g;
}

void check_target(const Gate& g, const std::vector<std::string>& targets) {
  if (!(g.target.empty() || std::find(targets.begin(), targets.end(), g.target) != targets.end()))
    fail("--fail-on '" + g.expression + "': target '" + g.target + "' is not in the report");
}

// Output gates need the output (or, for output.M, any output) among those of a target.
void check_output(const Gate& g, const std::vector<std::string>& outputs) {
  if (!g.output_metric.empty() && !(g.output.empty() ? !outputs.empty()
                                                     : std::find(outputs.begin(), outputs.end(), g.output) != outputs.end()))
    fail("--fail-on '" + g.expression + "': no output " + (g.output.empty() ? "" : "'" + g.output + "' ") +
         "in the report");
}

}  // namespace

void check_gates(const std::vector<std::string>& expressions, const std::vector<std::string>& targets,
                 const std::vector<std::string>& outputs) {
  for (const std::string& expr : expressions) {
    const Gate g = parse_gate(expr);
    check_target(g, targets);
    check_output(g, outputs);
  }
}

std::vector<GateResult> evaluate_gates(const report::Report& report, const std::vector<std::string>& expressions) {
  std::vector<GateResult> results;
  for (const std::string& expr : expressions) {
    const Gate g = parse_gate(expr);
    std::vector<std::string> targets;
    for (const auto& [fmt, summary] : report.summary) targets.push_back(fmt);
    check_target(g, targets);
    GateResult result{expr, false, ""};
    for (const auto& [fmt, summary] : report.summary) {
      if (!g.target.empty() && fmt != g.target) continue;
      double value = 0;
      if (g.metric == "unsafe_nodes") value = static_cast<double>(summary.unsafe_nodes.size());
      else if (g.metric == "warn_nodes") value = static_cast<double>(summary.warn_nodes.size());
      else {
        std::vector<std::string> outputs;
        for (const auto& o : summary.outputs) outputs.push_back(o.name);
        check_output(g, outputs);
        const bool lower_worse = lower_is_worse(g.output_metric);
        value = lower_worse ? INFINITY : -INFINITY;
        for (const auto& o : summary.outputs) {
          if (!g.output.empty() && o.name != g.output) continue;
          const double v = output_metric(o, g.output_metric);
          value = std::isnan(v) ? v : std::isnan(value) ? value : lower_worse ? std::min(value, v) : std::max(value, v);
        }
      }
      if (gate_comparison_holds(value, g.op, g.limit)) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s: %s = %.6g %s %s", fmt.c_str(), g.metric.c_str(), value, g.op.c_str(),
                      g.number.c_str());
        result.failed = true;
        result.detail += (result.detail.empty() ? "" : "; ") + std::string(buf);
      }
    }
    results.push_back(result);
  }
  return results;
}

}  // namespace mpa
