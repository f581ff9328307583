// `mpaudit diff` (reports/diff.h): exact output on small reports with a planted regression, quiet on
// identical reports, and the exit code of --fail-on-regression.
#include <gtest/gtest.h>

#include "reports/diff.h"
#include "support/audit_helpers.h"
#include "support/report_versions.h"
#include "support/run_cli.h"

using namespace mpa;
using namespace mpa::test;

namespace {

// x scaled by `gain` and back: a gain past fp16's range overflows, the rest only rounds.
ModelBuilder scaled_model(float gain) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("gain", {}, {gain});
  b.initializer("inverse", {}, {1.f / gain});
  b.node("Mul", {"x", "gain"}, {"h"}, "scale");
  b.node("Mul", {"h", "inverse"}, {"y"}, "shrink");
  b.output("y");
  return b;
}

report::Report audited(float gain) {
  Audited a = audit(scaled_model(gain), {{{"x", normal({64}, 30, 0, 3)}}});
  a.report.model_sha256 = "same-model";
  a.report.config.total_samples = 1;
  a.report.config.sample_ranges = {{0, 1}};
  return a.report;
}

}  // namespace

TEST(ReportDiff, IdenticalReportsShowNoChange) {
  const report::Report r = audited(10);
  const report::Diff d = report::diff(r, r);
  EXPECT_EQ(d.regressions(), 0);
  EXPECT_EQ(report::diff_text(d), "no change beyond the thresholds\n0 regressions, 0 improvements\n");
}

TEST(ReportDiff, APlantedOverflowIsARegressionWithItsFigures) {
  const report::Diff d = report::diff(audited(10), audited(1e4f));
  EXPECT_EQ(report::diff_text(d),
            "fp16:\n"
            "  worse      verdict  fp16: PASS -> FAIL\n"
            "  worse      unsafe   'scale' (Mul): new: overflow: reference absmax 8.31e+05 exceeds fp16 max 65504 in "
            "55 of 64 values; Inf reaches output 'y': 55 of 64 values\n"
            "  worse      overflow 'scale' (Mul) output 'h': 0 -> 55 reference values beyond fp16 max\n"
            "  worse      output   'y': finite (SQNR 64.4 dB) -> NaN/Inf\n"
            "4 regressions, 0 improvements\n");
  // The way back is all improvements.
  const report::Diff back = report::diff(audited(1e4f), audited(10));
  EXPECT_EQ(back.regressions(), 0);
  EXPECT_EQ(back.improvements(), 4);
  EXPECT_EQ(report::diff_markdown(back),
            "### mpaudit diff: 0 regressions, 4 improvements\n\n"
            "| target | | change | where | detail |\n|---|---|---|---|---|\n"
            "| fp16 | better | verdict | fp16 | FAIL -> PASS |\n"
            "| fp16 | better | unsafe | 'scale' (Mul) | cleared (now safe) |\n"
            "| fp16 | better | overflow | 'scale' (Mul) output 'h' | 55 -> 0 reference values beyond fp16 max |\n"
            "| fp16 | better | output | 'y' | NaN/Inf -> finite, SQNR 64.4 dB |\n");
}

TEST(ReportDiff, ModelsThatDifferAreSaidSo) {
  report::Report other = audited(10);
  other.model_sha256 = "another-model";
  const report::Diff d = report::diff(audited(10), other);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0], "the models differ (sha256 same-model -> another-mode): nodes are matched by name");
}

TEST(ReportDiff, FailOnRegressionSetsTheExitCode) {
  const TempDir dir;
  auto cli = [&](const std::string& args) { return run_cli(dir, args); };
  const std::string base = (dir / "base.json").string(), now = (dir / "new.json").string();
  report::write_report(base, audited(10));
  report::write_report(now, audited(1e4f));
  EXPECT_EQ(cli("diff " + base + " " + base + " --fail-on-regression").exit_code, 0);
  const CliResult worse = cli("diff " + base + " " + now + " --fail-on-regression --format markdown");
  EXPECT_EQ(worse.exit_code, 1) << worse.err;
  EXPECT_NE(worse.out.find("| fp16 | **worse** | verdict | fp16 | PASS -> FAIL |"), std::string::npos) << worse.out;
  EXPECT_EQ(cli("diff " + base + " " + now).exit_code, 0) << "without the flag the diff only reports";
  expect_clean_error(cli("diff " + base + " " + now + " --format html"), {"--format must be text or markdown"});
}

// A report of schema 1 (before consequences and verified advice) against one of schema 2: the figures both
// versions carry are compared alike.
TEST(ReportDiff, ComparesAcrossSchemaVersions) {
  const TempDir dir;
  const std::string v1 = (dir / "v1.json").string(), v2 = (dir / "v2.json").string();
  report::write_report(v2, audited(1e4f));
  nlohmann::json old = nlohmann::json::parse(read_whole_file(v2));
  as_schema_one(old);
  write_whole_file(v1, old.dump());
  const report::Diff same = report::diff(report::read_report(v1), report::read_report(v2));
  EXPECT_EQ(same.regressions(), 0) << report::diff_text(same);
  const report::Diff better = report::diff(report::read_report(v1), audited(10));
  EXPECT_EQ(better.improvements(), 4) << report::diff_text(better);
}
