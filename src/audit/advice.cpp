#include "audit/advice.h"

#include <algorithm>

namespace mpa {

namespace {

std::string joined(const std::vector<std::string>& names, size_t shown = 5) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// The first reason of the first unsafe node, to say why a list does not pass.
std::string first_unsafe_reason(const report::Report& r, const std::string& format) {
  for (const report::NodeStats& n : r.nodes) {
    auto t = n.targets.find(format);
    if (t == n.targets.end() || t->second.verdict != report::Verdict::Unsafe) continue;
    for (const report::Reason& reason : t->second.reasons)
      if (reason.level == report::Verdict::Unsafe) return "'" + n.name + "': " + reason.code + ": " + reason.message;
  }
  return "";
}

}  // namespace

void verify_advice(report::Report& report, const AuditWithKept& audit_with, int max_rounds) {
  for (auto& [format, summary] : report.summary) {
    if (summary.pass) continue;
    std::vector<std::string> advice = summary.keep_fp32;
    summary.advice = {};
    for (int round = 1; round <= max_rounds; ++round) {
      const report::Report again = audit_with(advice, format);
      const report::TargetSummary& s = again.summary.at(format);
      summary.advice.rounds = round;
      if (s.pass) {
        summary.keep_fp32 = advice;
        summary.advice.verified = true;
        summary.advice.note.clear();
        break;
      }
      std::vector<std::string> grown = advice;
      for (const std::string& name : s.keep_fp32)
        if (std::find(grown.begin(), grown.end(), name) == grown.end()) grown.push_back(name);
      const std::string why = "with " + std::to_string(advice.size()) + " node" + (advice.size() == 1 ? "" : "s") +
                              " kept in fp32, " + std::to_string(s.unsafe_nodes.size()) + " stay unsafe (" +
                              joined(s.unsafe_nodes) + "; first: " + first_unsafe_reason(again, format) + ")";
      summary.keep_fp32 = advice;
      if (grown.size() == advice.size()) {
        summary.advice.note = "no verified advice: " + why + ", and keeping those adds no node";
        break;
      }
      if (round == max_rounds) {
        summary.advice.note = "no verified advice after " + std::to_string(max_rounds) + " round" +
                              (max_rounds == 1 ? "" : "s") + ": " + why;
        break;
      }
      advice = std::move(grown);
    }
  }
}

}  // namespace mpa
