#include "reports/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace mpa::report {

namespace {

std::string number(double v, const char* format = "%.3g") {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string signed_db(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f dB", d);
  return buf;
}

std::string subject_of(const NodeStats& n) { return "'" + n.name + "' (" + n.op_type + ")"; }

// The first unsafe reason of a node, to say why it is unsafe.
std::string first_reason(const NodeTarget& t, Verdict level) {
  for (const Reason& r : t.reasons)
    if (r.level == level) return r.code + ": " + r.message;
  return "";
}

class Differ {
 public:
  Differ(const Report& base, const Report& now, const DiffOptions& options, Diff& out)
      : base_(base), now_(now), options_(options), out_(out) {
    for (const NodeStats& n : base.nodes) base_nodes_[n.name] = &n;
  }

  void run() {
    if (base_.model_sha256 != now_.model_sha256)
      out_.notes.push_back("the models differ (sha256 " + base_.model_sha256.substr(0, 12) + " -> " +
                           now_.model_sha256.substr(0, 12) + "): nodes are matched by name");
    int64_t only_new = 0;
    for (const NodeStats& n : now_.nodes) only_new += !base_nodes_.count(n.name);
    int64_t only_base = 0;
    std::map<std::string, bool> now_names;
    for (const NodeStats& n : now_.nodes) now_names[n.name] = true;
    for (const NodeStats& n : base_.nodes) only_base += !now_names.count(n.name);
    if (only_new) out_.notes.push_back(std::to_string(only_new) + " node(s) only in NEW");
    if (only_base) out_.notes.push_back(std::to_string(only_base) + " node(s) only in BASE");
    for (const auto& [fmt, s] : base_.summary)
      if (!now_.summary.count(fmt)) out_.notes.push_back("target " + fmt + " audited in BASE only");
    for (const auto& [fmt, s] : now_.summary) {
      if (!base_.summary.count(fmt)) {
        out_.notes.push_back("target " + fmt + " audited in NEW only");
        continue;
      }
      target(fmt, base_.summary.at(fmt), s);
    }
  }

 private:
  void add(const std::string& fmt, const char* kind, std::string subject, std::string detail, bool regression) {
    out_.changes.push_back({fmt, kind, std::move(subject), std::move(detail), regression});
  }

  void target(const std::string& fmt, const TargetSummary& was, const TargetSummary& is) {
    if (was.pass != is.pass)
      add(fmt, "verdict", fmt, std::string(was.pass ? "PASS" : "FAIL") + " -> " + (is.pass ? "PASS" : "FAIL"), !is.pass);
    for (const NodeStats& n : now_.nodes) {
      auto b = base_nodes_.find(n.name);
      if (b == base_nodes_.end() || !n.targets.count(fmt) || !b->second->targets.count(fmt)) continue;
      node(fmt, *b->second, n);
    }
    for (const OutputSummary& o : is.outputs) {
      auto w = std::find_if(was.outputs.begin(), was.outputs.end(), [&](const OutputSummary& x) { return x.name == o.name; });
      if (w == was.outputs.end()) continue;
      const bool was_finite = std::isfinite(w->max_abs_err), is_finite = std::isfinite(o.max_abs_err);
      if (was_finite != is_finite) {
        add(fmt, "output", "'" + o.name + "'", is_finite ? "NaN/Inf -> finite, SQNR " + number(o.sqnr_db, "%.1f") + " dB"
                                                         : "finite (SQNR " + number(w->sqnr_db, "%.1f") + " dB) -> NaN/Inf",
            !is_finite);
      } else if (is_finite && std::isfinite(w->sqnr_db) && std::isfinite(o.sqnr_db) &&
                 std::fabs(o.sqnr_db - w->sqnr_db) >= options_.sqnr_db) {
        add(fmt, "output", "'" + o.name + "'",
            "SQNR " + number(w->sqnr_db, "%.1f") + " -> " + number(o.sqnr_db, "%.1f") + " dB (" +
                signed_db(o.sqnr_db - w->sqnr_db) + "), max rel err " + number(w->max_rel_err) + " -> " +
                number(o.max_rel_err),
            o.sqnr_db < w->sqnr_db);
      }
    }
  }

  void node(const std::string& fmt, const NodeStats& b, const NodeStats& n) {
    const NodeTarget& bt = b.targets.at(fmt);
    const NodeTarget& nt = n.targets.at(fmt);
    if (bt.verdict != nt.verdict) {
      if (nt.verdict == Verdict::Unsafe) add(fmt, "unsafe", subject_of(n), "new: " + first_reason(nt, Verdict::Unsafe), true);
      else if (bt.verdict == Verdict::Unsafe)
        add(fmt, "unsafe", subject_of(n), "cleared (now " + verdict_name(nt.verdict) + ")", false);
      else if (nt.verdict == Verdict::Warn) add(fmt, "warn", subject_of(n), "new: " + first_reason(nt, Verdict::Warn), true);
      else add(fmt, "warn", subject_of(n), "cleared", false);
    }
    for (const TensorStats& t : n.tensors) {
      auto bt_it = std::find_if(b.tensors.begin(), b.tensors.end(), [&](const TensorStats& x) { return x.name == t.name; });
      if (bt_it == b.tensors.end() || !t.measured || !bt_it->measured) continue;
      if (!t.targets.count(fmt) || !bt_it->targets.count(fmt)) continue;
      tensor(fmt, n, bt_it->targets.at(fmt), t.targets.at(fmt), t);
    }
  }

  void tensor(const std::string& fmt, const NodeStats& n, const TensorTarget& was, const TensorTarget& is,
              const TensorStats& t) {
    const std::string where = subject_of(n) + " output '" + t.name + "'";
    if (was.fit.overflow == 0 && is.fit.overflow > 0)
      add(fmt, "overflow", where, "0 -> " + std::to_string(is.fit.overflow) + " reference values beyond " + fmt + " max",
          true);
    else if (was.fit.overflow > 0 && is.fit.overflow == 0)
      add(fmt, "overflow", where, std::to_string(was.fit.overflow) + " -> 0 reference values beyond " + fmt + " max",
          false);
    const probes::Divergence& bi = was.isolated;
    const probes::Divergence& ni = is.isolated;
    if (bi.compared == 0 || ni.compared == 0) return;
    const double before = bi.sqnr_db(), after = ni.sqnr_db();
    if (std::isfinite(before) && std::isfinite(after) && std::fabs(after - before) >= options_.sqnr_db) {
      add(fmt, "sqnr", where,
          "isolated SQNR " + number(before, "%.1f") + " -> " + number(after, "%.1f") + " dB (" + signed_db(after - before) + ")",
          after < before);
      return;
    }
    const double lo = std::min(bi.max_ulp, ni.max_ulp), hi = std::max(bi.max_ulp, ni.max_ulp);
    if (hi >= 1 && hi >= options_.ulp_ratio * std::max(lo, 0.5))
      add(fmt, "ulp", where, "isolated max error " + number(bi.max_ulp) + " -> " + number(ni.max_ulp) + " ulp",
          ni.max_ulp > bi.max_ulp);
  }

  const Report& base_;
  const Report& now_;
  const DiffOptions& options_;
  Diff& out_;
  std::map<std::string, const NodeStats*> base_nodes_;
};

std::string tally(const Diff& d) {
  return std::to_string(d.regressions()) + " regression" + (d.regressions() == 1 ? "" : "s") + ", " +
         std::to_string(d.improvements()) + " improvement" + (d.improvements() == 1 ? "" : "s");
}

}  // namespace

int64_t Diff::regressions() const {
  return std::count_if(changes.begin(), changes.end(), [](const Change& c) { return c.regression; });
}
int64_t Diff::improvements() const { return static_cast<int64_t>(changes.size()) - regressions(); }

Diff diff(const Report& base, const Report& now, const DiffOptions& options) {
  Diff d;
  d.base_path = base.model_path;
  d.new_path = now.model_path;
  Differ(base, now, options, d).run();
  return d;
}

std::string diff_text(const Diff& d) {
  std::string out;
  for (const std::string& note : d.notes) out += "note: " + note + "\n";
  std::string target;
  for (const Change& c : d.changes) {
    if (c.target != target) out += (target = c.target) + ":\n";
    char line[64];
    std::snprintf(line, sizeof line, "  %-10s %-8s ", c.regression ? "worse" : "better", c.kind.c_str());
    out += line + c.subject + ": " + c.detail + "\n";
  }
  if (d.changes.empty()) out += "no change beyond the thresholds\n";
  return out + tally(d) + "\n";
}

std::string diff_markdown(const Diff& d) {
  std::string out = "### mpaudit diff: " + tally(d) + "\n\n";
  for (const std::string& note : d.notes) out += "> " + note + "\n";
  if (!d.notes.empty()) out += "\n";
  if (d.changes.empty()) return out + "No change beyond the thresholds.\n";
  out += "| target | | change | where | detail |\n|---|---|---|---|---|\n";
  auto cell = [](std::string s) {
    for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    return s;
  };
  for (const Change& c : d.changes)
    out += "| " + c.target + " | " + (c.regression ? "**worse**" : "better") + " | " + c.kind + " | " +
           cell(c.subject) + " | " + cell(c.detail) + " |\n";
  return out;
}

}  // namespace mpa::report
