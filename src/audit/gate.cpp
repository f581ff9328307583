#include "audit/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

namespace mpa {

namespace {

double output_metric(const report::OutputSummary& o, const std::string& metric) {
  if (metric == "max_abs_err") return o.max_abs_err;
  if (metric == "max_rel_err") return o.max_rel_err;
  if (metric == "cosine") return o.cosine;
  if (metric == "sqnr_db") return o.sqnr_db;
  fail("--fail-on: unknown output metric '" + metric + "' (max_abs_err, max_rel_err, cosine, sqnr_db)");
}

bool lower_is_worse(const std::string& metric) { return metric == "cosine" || metric == "sqnr_db"; }

bool compare(double value, const std::string& op, double limit) {
  if (std::isnan(value)) return true;  // an undefined figure never passes a gate
  if (op == ">") return value > limit;
  if (op == ">=") return value >= limit;
  if (op == "<") return value < limit;
  if (op == "<=") return value <= limit;
  if (op == "==") return value == limit;
  return value != limit;
}

}  // namespace

std::vector<GateResult> evaluate_gates(const report::Report& report, const std::vector<std::string>& expressions) {
  static const std::regex grammar(
      R"(^\s*(?:([a-z0-9]+)\.)?(unsafe_nodes|warn_nodes|output(?:\[([^\]]+)\])?\.([a-z_]+))\s*(>=|<=|==|!=|>|<)\s*([-+0-9.eE]+|inf)\s*$)");
  std::vector<GateResult> results;
  for (const std::string& expr : expressions) {
    std::smatch m;
    if (!(std::regex_match(expr, m, grammar)))
      fail("--fail-on '" + expr + "': expected [TARGET.]METRIC OP NUMBER, e.g. output.max_rel_err>1e-2");
    const std::string target = m[1], metric = m[2], output = m[3], output_metric_name = m[4], op = m[5];
    const std::string number = m[6];
    double limit = 0;
    size_t parsed = 0;  // stod stops at the first bad character: "1e" or "1.2.3" must not pass as 1 or 1.2
    try {
      limit = number == "inf" ? INFINITY : std::stod(number, &parsed);
    } catch (const std::exception&) {
      fail("--fail-on '" + expr + "': bad number");
    }
    if (!(number == "inf" || parsed == number.size())) fail("--fail-on '" + expr + "': bad number '" + number + "'");
    if (!(target.empty() || report.summary.count(target)))
      fail("--fail-on '" + expr + "': target '" + target + "' is not in the report");
    GateResult result{expr, false, ""};
    for (const auto& [fmt, summary] : report.summary) {
      if (!target.empty() && fmt != target) continue;
      double value = 0;
      std::string what = metric;
      if (metric == "unsafe_nodes") value = static_cast<double>(summary.unsafe_nodes.size());
      else if (metric == "warn_nodes") value = static_cast<double>(summary.warn_nodes.size());
      else {
        bool found = false;
        const bool lower_worse = lower_is_worse(output_metric_name);
        value = lower_worse ? INFINITY : -INFINITY;
        for (const auto& o : summary.outputs) {
          if (!output.empty() && o.name != output) continue;
          found = true;
          const double v = output_metric(o, output_metric_name);
          value = std::isnan(v) ? v : std::isnan(value) ? value : lower_worse ? std::min(value, v) : std::max(value, v);
        }
        if (!(found))
          fail("--fail-on '" + expr + "': no output " + (output.empty() ? "" : "'" + output + "' ") + "in the report");
      }
      if (compare(value, op, limit)) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s: %s = %.6g %s %s", fmt.c_str(), what.c_str(), value, op.c_str(), m[6].str().c_str());
        result.failed = true;
        result.detail += (result.detail.empty() ? "" : "; ") + std::string(buf);
      }
    }
    results.push_back(result);
  }
  return results;
}

}  // namespace mpa
