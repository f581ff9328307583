#include "cli/summary.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <unistd.h>

#include <ctime>

#include "audit/gate.h"
#include "io/npy.h"
#include "reports/junit.h"

namespace mpa::cli {

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  return buf;
}

std::string hostname() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
}

void print_target(const report::Report& r, const std::string& fmt, const report::TargetSummary& s) {
  std::printf("\n== %s: %zu unsafe, %zu warn of %zu nodes (%lld sample%s, reference %s)\n", fmt.c_str(),
              s.unsafe_nodes.size(), s.warn_nodes.size(), r.nodes.size(), static_cast<long long>(r.config.samples),
              r.config.samples == 1 ? "" : "s", r.config.reference.c_str());
  if (!s.culprits.empty()) std::printf("worst nodes (by their own isolated error):\n");
  for (const std::string& name : s.culprits) {
    for (const report::NodeStats& n : r.nodes) {
      if (n.name != name) continue;
      const report::NodeTarget& t = n.targets.at(fmt);
      std::printf("  %-6s #%-4lld %s (%s)\n", report::verdict_name(t.verdict).c_str(), static_cast<long long>(n.index),
                  n.name.c_str(), n.op_type.c_str());
      for (const report::Reason& reason : t.reasons)
        std::printf("           %s: %s\n", reason.code.c_str(), reason.message.c_str());
      if (!t.roots.empty()) {
        std::string roots;
        for (const std::string& r : t.roots) roots += (roots.empty() ? "'" : ", '") + r + "'";
        std::printf("           root: %s\n", roots.c_str());
      }
    }
  }
  if (!s.first_error_jump.empty()) std::printf("propagated error first jumps at: %s\n", s.first_error_jump.c_str());
  auto figure = [](double v, const char* format) {
    char buf[32];
    if (std::isnan(v)) return std::string("n/a");
    std::snprintf(buf, sizeof buf, format, v);
    return std::string(buf);
  };
  for (const report::OutputSummary& o : s.outputs)
    std::printf("output %s: max_abs_err %s  max_rel_err %s  cosine %s  sqnr %s dB\n", o.name.c_str(),
                figure(o.max_abs_err, "%.4g").c_str(), figure(o.max_rel_err, "%.4g").c_str(),
                figure(o.cosine, "%.6f").c_str(), figure(o.sqnr_db, "%.1f").c_str());
  if (!s.keep_fp32.empty()) {
    std::printf("keep in fp32 (%s):", s.advice.verified ? "verified: an audit with these kept passes" : "not verified");
    for (const std::string& n : s.keep_fp32) std::printf(" %s", n.c_str());
    std::printf("\n");
  }
  if (!s.advice.verified && !s.advice.note.empty()) std::printf("keep-fp32 advice: %s\n", s.advice.note.c_str());
}

}  // namespace

namespace {

// One line when some nodes could not run on the backend asked for: how many, and each op with its reason.
void print_fallbacks(const report::Report& r) {
  std::map<std::string, int64_t> by_reason;  // "Op (reason)" -> nodes
  int64_t nodes = 0;
  for (const report::NodeStats& n : r.nodes) {
    if (n.fallbacks.empty()) continue;
    ++nodes;
    ++by_reason[n.op_type + " (" + n.fallbacks.begin()->second + ")"];
  }
  if (nodes == 0) return;
  std::string list;
  for (const auto& [what, count] : by_reason) list += (list.empty() ? "" : ", ") + what + " x" + std::to_string(count);
  std::printf("%lld of %zu nodes ran on the CPU instead of %s: %s\n", static_cast<long long>(nodes), r.nodes.size(),
              r.config.backend.c_str(), list.c_str());
}

}  // namespace

int finish_with_summary(const report::Report& report, const std::vector<std::string>& fail_on, bool quiet,
                        const std::string& junit_path) {
  if (!quiet) {
    print_fallbacks(report);
    for (const auto& [fmt, s] : report.summary) print_target(report, fmt, s);
  }
  bool failed = false;
  std::vector<report::GateOutcome> gates;
  if (fail_on.empty()) {
    // The default gate: no unsafe node in any target.
    report::GateOutcome unsafe{"unsafe_nodes>0", false, ""};
    for (const auto& [fmt, s] : report.summary) {
      if (s.pass) continue;
      unsafe.failed = true;
      unsafe.detail += (unsafe.detail.empty() ? "" : "; ") + fmt + ": unsafe_nodes = " +
                       std::to_string(s.unsafe_nodes.size()) + " > 0";
    }
    failed = unsafe.failed;
    gates.push_back(unsafe);
  } else {
    for (const GateResult& g : evaluate_gates(report, fail_on)) {
      failed |= g.failed;
      if (!quiet && g.failed) std::printf("gate failed: %s (%s)\n", g.expression.c_str(), g.detail.c_str());
      gates.push_back({g.expression, g.failed, g.detail});
    }
  }
  if (!junit_path.empty()) write_file_atomic(junit_path, report::junit_xml(report, gates, utc_now(), hostname()));
  if (!quiet) {
    std::printf("\nverdict:");
    for (const auto& [fmt, s] : report.summary) std::printf(" %s %s", fmt.c_str(), s.pass ? "PASS" : "FAIL");
    std::printf(" -> %s\n", failed ? "FAIL (exit 1)" : "PASS");
  }
  return failed ? 1 : 0;
}

}  // namespace mpa::cli
