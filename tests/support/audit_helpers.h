// Audits of small models built in tests (support/model_builder.h), with lookups for their verdicts.
#pragma once
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "audit/advice.h"
#include "audit/auditor.h"
#include "model/loader.h"
#include "support/model_builder.h"

namespace mpa::test {

struct Audited {
  report::Report report;
  const report::NodeStats& node(const std::string& name) const {
    for (const auto& n : report.nodes)
      if (n.name == name) return n;
    throw std::runtime_error("no node " + name);
  }
  bool has_reason(const std::string& node_name, const std::string& code, report::Verdict level,
                  const std::string& fmt = "fp16") const {
    for (const auto& r : node(node_name).targets.at(fmt).reasons)
      if (r.code == code && r.level == level) return true;
    return false;
  }
  std::string reasons(const std::string& node_name, const std::string& fmt = "fp16") const {
    std::string s;
    for (const auto& r : node(node_name).targets.at(fmt).reasons) s += r.code + "(" + report::verdict_name(r.level) + "): " + r.message + "\n";
    return s;
  }
  const report::TargetSummary& fp16() const { return report.summary.at("fp16"); }
};

inline report::Report audit_report(const Model& model, const std::vector<TensorMap>& samples,
                                   const AuditOptions& options) {
  Auditor auditor(model.graph, options);
  for (size_t i = 0; i < samples.size(); ++i) auditor.observe(samples[i], static_cast<int64_t>(i));
  report::Report r;
  for (Format f : options.targets) r.config.targets.emplace_back(format_name(f));
  r.config.samples = static_cast<int64_t>(samples.size());
  r.config.thresholds = options.thresholds;
  auditor.fill(r);
  return r;
}

// What an audit concludes: each target's summary and every node's verdicts and reasons.
inline void expect_same_conclusions(const report::Report& a, const report::Report& b, const std::string& what) {
  for (const auto& [fmt, s] : a.summary) {
    const report::TargetSummary& t = b.summary.at(fmt);
    EXPECT_EQ(s.pass, t.pass) << what << " " << fmt;
    EXPECT_EQ(s.unsafe_nodes, t.unsafe_nodes) << what << " " << fmt;
    EXPECT_EQ(s.warn_nodes, t.warn_nodes) << what << " " << fmt;
    EXPECT_EQ(s.culprits, t.culprits) << what << " " << fmt;
    EXPECT_EQ(s.keep_fp32, t.keep_fp32) << what << " " << fmt;
    EXPECT_EQ(s.first_error_jump, t.first_error_jump) << what << " " << fmt;
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size()) << what;
  for (size_t i = 0; i < a.nodes.size(); ++i)
    for (const auto& [fmt, t] : a.nodes[i].targets) {
      const report::NodeTarget& u = b.nodes[i].targets.at(fmt);
      EXPECT_EQ(t.verdict, u.verdict) << what << " " << a.nodes[i].name << " " << fmt;
      ASSERT_EQ(t.reasons.size(), u.reasons.size()) << what << " " << a.nodes[i].name << " " << fmt;
      for (size_t r = 0; r < t.reasons.size(); ++r) EXPECT_EQ(t.reasons[r].message, u.reasons[r].message) << what;
      EXPECT_EQ(t.consequence, u.consequence) << what << " " << a.nodes[i].name << " " << fmt;
    }
}

// Every fixture audited with the isolated pass on all nodes is audited again with `--isolated suspects`,
// which must conclude the same (audit/auditor.h IsolatedPass).
inline Audited audit(const ModelBuilder& b, const std::vector<TensorMap>& samples, AuditOptions options = {}) {
  const Model model = load_model_from_bytes(b.bytes(), ".", "golden.onnx");
  Audited a{audit_report(model, samples, options)};
  if (options.isolated == IsolatedPass::All) {
    AuditOptions suspects = options;
    suspects.isolated = IsolatedPass::Suspects;
    expect_same_conclusions(a.report, audit_report(model, samples, suspects), "--isolated suspects vs all:");
  }
  return a;
}

inline Tensor normal(Shape shape, float scale, float shift, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = shift + scale * dist(rng);
  return t;
}

inline std::vector<float> values(size_t n, float scale, uint32_t seed) {
  const Tensor t = normal({static_cast<int64_t>(n)}, scale, 0, seed);
  return {t.data<float>(), t.data<float>() + n};
}

// The audit with its keep-fp32 advice verified as `mpaudit audit` verifies it (audit/advice.h).
inline Audited audit_with_advice(const ModelBuilder& b, const std::vector<TensorMap>& samples,
                                 AuditOptions options = {}) {
  Audited a = audit(b, samples, options);
  verify_advice(a.report, [&](const std::vector<std::string>& keep, const std::string& format) {
    AuditOptions again = options;
    again.keep_fp32 = keep;
    again.targets = {*parse_format(format)};
    return audit(b, samples, again).report;
  });
  return a;
}

}  // namespace mpa::test
