// The audit job shared by `mpaudit audit` and `mpaudit view MODEL.onnx` (src/cli/audit_job.h), on the bundled
// attention block: options parsed as the commands parse them, progress that only grows and reaches the
// total, partial reports on the way, cancellation, and nodes pinned to FP32; then the dashboard's worker
// (ui/live_audit.h) running the same job.
#include <gtest/gtest.h>

#include <thread>

#include "cli/audit_job.h"
#include "ui/live_audit.h"

namespace mpa {
namespace {

const std::string kDemo = std::string(MPA_SOURCE_DIR) + "/models/demo/";

// `--input hidden=... --input attention_mask=...` and `extra`, parsed by the options `audit` and `view` share.
cli::AuditJobArgs attention_args(const std::vector<std::string>& extra = {}) {
  cli::AuditJobArgs args;
  CLI::App app;
  cli::add_audit_job_options(app, args);
  std::vector<std::string> argv = {"--input",   "hidden=" + kDemo + "attention_hidden.npy",
                                   "--input",   "attention_mask=" + kDemo + "attention_mask.npy",
                                   "--threads", "1"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them as a stack
  app.parse(argv);
  args.model = kDemo + "tiny_attention.onnx";
  return args;
}

TEST(AuditJobTest, ProgressGrowsToTheTotalWithPartialReportsOnTheWay) {
  const cli::AuditJob job(attention_args({"--target", "fp16", "--target", "bf16"}));
  std::vector<int64_t> done_seen;
  int64_t total_seen = -1;
  size_t nodes_in_snapshot = 0;
  const cli::AuditRun run =
      job.run({}, [&](int64_t done, int64_t total, const std::function<report::Report()>& snapshot) {
        done_seen.push_back(done);
        total_seen = total;
        if (done == 3) nodes_in_snapshot = snapshot().nodes.size();
      });
  ASSERT_FALSE(done_seen.empty());
  EXPECT_EQ(done_seen.front(), 0);
  EXPECT_TRUE(std::is_sorted(done_seen.begin(), done_seen.end()));
  EXPECT_EQ(std::adjacent_find(done_seen.begin(), done_seen.end()), done_seen.end()) << "a node run reported twice";
  EXPECT_EQ(done_seen.back(), total_seen);
  EXPECT_EQ(total_seen, 25);  // 25 nodes, 1 sample
  EXPECT_EQ(nodes_in_snapshot, run.report.nodes.size());
  EXPECT_EQ(run.report.config.targets, (std::vector<std::string>{"fp16", "bf16"}));
  EXPECT_FALSE(run.report.summary.at("fp16").pass);
}

TEST(AuditJobTest, CancellingStopsTheRunEarly) {
  const cli::AuditJob job(attention_args({"--samples", "4"}));
  std::atomic<bool> cancel{false};
  int64_t last_done = 0;
  EXPECT_THROW(job.run(
                   {},
                   [&](int64_t done, int64_t, const auto&) {
                     last_done = done;
                     if (done == 5) cancel = true;
                   },
                   &cancel),
               cli::AuditCancelled);
  EXPECT_EQ(last_done, 5);
}

TEST(AuditJobTest, PinningTheUnsafeNodesKeepsThemInFp32) {
  const cli::AuditJob job(attention_args());
  const report::Report first = job.run(job.args().keep_fp32).report;
  const std::vector<std::string> unsafe = first.summary.at("fp16").unsafe_nodes;
  ASSERT_FALSE(unsafe.empty());
  EXPECT_TRUE(first.config.keep_fp32.empty());

  const report::Report pinned = job.run(unsafe).report;
  std::vector<std::string> sorted = unsafe;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(pinned.config.keep_fp32, sorted);
  for (const report::NodeStats& node : pinned.nodes) {
    const bool pinned_node = std::find(unsafe.begin(), unsafe.end(), node.name) != unsafe.end();
    EXPECT_EQ(node.targets.at("fp16").kept_fp32, pinned_node) << node.name;
  }
  EXPECT_NE(report::serialize(pinned), report::serialize(first));
  // What to keep in FP32 still names them: pinned or unsafe.
  const std::vector<std::string>& keep = pinned.summary.at("fp16").keep_fp32;
  for (const std::string& name : unsafe) EXPECT_NE(std::find(keep.begin(), keep.end(), name), keep.end()) << name;
}

TEST(AuditJobTest, KeepFp32OptionTakesRepeatsAndCommaLists) {
  const cli::AuditJobArgs args =
      attention_args({"--keep-fp32", "mask/scale,mask/reshape", "--keep-fp32", "attention/add_mask"});
  EXPECT_EQ(args.keep_fp32, (std::vector<std::string>{"mask/scale", "mask/reshape", "attention/add_mask"}));
}

TEST(AuditJobTest, TheDashboardWorkerRunsTheJobAndPublishesItsReport) {
  auto job = std::make_shared<cli::AuditJob>(attention_args());
  ui::LiveAudit audit([job](const std::vector<std::string>& keep_fp32, const ui::AuditProgressFn& progress,
                            const std::atomic<bool>& cancel) { return job->run(keep_fp32, progress, &cancel).report; });
  audit.start({"mask/scale"});
  std::optional<ui::AuditSnapshot> final_report;
  for (int tries = 0; tries < 6000 && !final_report; ++tries) {
    if (auto snapshot = audit.take_snapshot(); snapshot && snapshot->is_final())
      final_report = std::move(snapshot);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(final_report) << "no final report within 30 s";
  EXPECT_EQ(final_report->report.config.keep_fp32, std::vector<std::string>{"mask/scale"});
  const ui::ReportModel model(std::move(final_report->report), "tiny_attention.onnx");
  EXPECT_TRUE(model.target_view("fp16").nodes[static_cast<size_t>(model.node_index("mask/scale"))].kept_fp32);
  EXPECT_EQ(model.target_view("fp16").pending_count, 0);
  EXPECT_TRUE(audit.status().error.empty());
}

}  // namespace
}  // namespace mpa
