// The dashboard's live audit without a window (ui/live_audit.h): pending nodes of a partial report, the
// what-if pin set over top-level owners and name-scope groups, the clipboard text, the before -> after
// lines, and the worker against a scripted runner (snapshots, errors, prompt cancellation).
#include <gtest/gtest.h>

#include <thread>

#include "ui/graph_model.h"
#include "ui/live_audit.h"

namespace mpa::ui {
namespace {

const std::string kTarget = "fp16";

report::NodeStats make_node(std::string name, std::string scope = "") {
  report::NodeStats node;
  node.name = std::move(name);
  node.scope = std::move(scope);
  node.op_type = "Add";
  node.executions = 1;
  node.targets[kTarget].verdict = report::Verdict::Unsafe;
  return node;
}

// A control-flow node inside a name scope, with an inner node, and two plain nodes after it.
report::Report make_report() {
  report::Report r;
  r.config.targets = {kTarget};
  r.nodes.push_back(make_node("/enc/If_0"));
  r.nodes.push_back(make_node("/enc/If_0/then/Add", "/enc/If_0/then"));
  r.nodes.push_back(make_node("/enc/MatMul"));
  r.nodes.push_back(make_node("/dec/Add"));
  for (size_t i = 0; i < r.nodes.size(); ++i) r.nodes[i].index = static_cast<int64_t>(i);
  return r;
}

TEST(LiveReportModelTest, InnerNodesBelongToTheirTopLevelOwner) {
  const ReportModel model(make_report(), "m.onnx");
  EXPECT_EQ(model.top_level_of(0), 0);
  EXPECT_EQ(model.top_level_of(1), 0);
  EXPECT_EQ(model.top_level_of(2), 2);
  EXPECT_FALSE(model.partial());
}

TEST(LiveReportModelTest, NodesNotRunYetArePendingAndNotCounted) {
  // One top-level node run: /enc/If_0 and its inner node are done, the two after it pending.
  const ReportModel model(make_report(), "m.onnx", 1);
  EXPECT_TRUE(model.partial());
  EXPECT_FALSE(model.pending(0));
  EXPECT_FALSE(model.pending(1));
  EXPECT_TRUE(model.pending(2));
  EXPECT_TRUE(model.pending(3));
  const TargetView& view = model.target_view(kTarget);
  EXPECT_EQ(view.pending_count, 2);
  EXPECT_EQ(view.unsafe_count, 2);  // the pending nodes' skeleton verdicts are not counted
  EXPECT_EQ(view.unsafe.node_count, 2);
  EXPECT_TRUE(view.nodes[3].pending);
  // In the graph's verdict colouring they are grey, not safe.
  const report::Thresholds thresholds;
  const std::vector<MetricBin> bins = metric_bins(GraphMetric::Verdict, thresholds, kTarget);
  EXPECT_EQ(bins[static_cast<size_t>(metric_bin(GraphMetric::Verdict, view.nodes[3], thresholds, kTarget))].tone,
            BinTone::NotMeasured);
  // Once every top-level node has run (a later sample), nothing is pending.
  EXPECT_EQ(ReportModel(make_report(), "m.onnx", 4).target_view(kTarget).pending_count, 0);
}

// A branch that no audited sample took has no figures: its nodes are "not run", never counted as safe.
TEST(LiveReportModelTest, NodesOfBranchesNoSampleTookAreNotRun) {
  report::Report r = make_report();
  r.nodes[1].executions = 0;
  r.nodes[1].targets[kTarget].verdict = report::Verdict::Safe;  // the skeleton's verdict of a node without figures
  const ReportModel model(std::move(r), "m.onnx");
  const TargetView& view = model.target_view(kTarget);
  EXPECT_TRUE(view.nodes[1].not_run);
  EXPECT_FALSE(view.nodes[1].pending);
  EXPECT_EQ(view.not_run_count, 1);
  EXPECT_EQ(view.safe_count, 0);
  EXPECT_EQ(view.unsafe_count, 3);
  const report::Thresholds thresholds;
  const std::vector<MetricBin> bins = metric_bins(GraphMetric::Verdict, thresholds, kTarget);
  EXPECT_EQ(bins[static_cast<size_t>(metric_bin(GraphMetric::Verdict, view.nodes[1], thresholds, kTarget))].tone,
            BinTone::NotMeasured);
}

TEST(LiveReportModelTest, SnapshotsOfOneGraphShareTheStructureHash) {
  report::Report other = make_report();
  other.nodes[2].targets[kTarget].verdict = report::Verdict::Safe;
  const ReportModel a(make_report(), "m.onnx", 1), b(std::move(other), "m.onnx");
  EXPECT_EQ(a.structure_hash(), b.structure_hash());
  EXPECT_NE(a.identity(), b.identity());
  report::Report renamed = make_report();
  renamed.nodes[3].name = "/dec/Mul";
  EXPECT_NE(ReportModel(std::move(renamed), "m.onnx").structure_hash(), a.structure_hash());
}

TEST(PinSetTest, PinningAnInnerNodePinsItsTopLevelOwner) {
  const ReportModel model(make_report(), "m.onnx");
  PinSet pins;
  pins.set(model, {1}, true);
  EXPECT_EQ(pins.names(model), (std::vector<std::string>{"/enc/If_0"}));
  EXPECT_TRUE(pins.pinned(model, 0));
  EXPECT_TRUE(pins.pinned(model, 1));
  EXPECT_FALSE(pins.pinned(model, 2));
  pins.set(model, {0}, false);
  EXPECT_TRUE(pins.names(model).empty());
}

TEST(PinSetTest, PinningAGroupPinsItsTopLevelMembersInExecutionOrder) {
  const ReportModel model(make_report(), "m.onnx");
  std::vector<std::string> names;
  for (int i = 0; i < model.node_count(); ++i) names.push_back(model.node(i).name);
  const ScopeTree tree(names);
  const int encoder = tree.find("/enc");
  ASSERT_GE(encoder, 0);
  const std::vector<int>& group = tree.scope(encoder).nodes;
  PinSet pins({"/dec/Add"});
  EXPECT_FALSE(pins.all_pinned(model, group));
  const int before = pins.version();
  pins.set(model, group, true);
  EXPECT_GT(pins.version(), before);
  EXPECT_TRUE(pins.all_pinned(model, group));
  EXPECT_EQ(pins.names(model), (std::vector<std::string>{"/enc/If_0", "/enc/MatMul", "/dec/Add"}));
  const int pinned = pins.version();
  pins.set(model, group, true);  // nothing new: no re-run
  EXPECT_EQ(pins.version(), pinned);
  pins.set(model, group, false);
  EXPECT_EQ(pins.names(model), (std::vector<std::string>{"/dec/Add"}));
}

TEST(PinSetTest, NamesTheModelLacksStayListedLastUntilUnpinned) {
  const ReportModel model(make_report(), "m.onnx");
  PinSet pins({"zzz", "/dec/Add", "aaa"});
  EXPECT_EQ(pins.names(model), (std::vector<std::string>{"/dec/Add", "aaa", "zzz"}));
  pins.unpin("zzz");
  pins.unpin("aaa");
  EXPECT_EQ(pins.names(model), (std::vector<std::string>{"/dec/Add"}));
}

TEST(WhatIfTest, ClipboardHasOneNamePerLineThenTheFlags) {
  EXPECT_EQ(keep_fp32_clipboard({"mask/scale", "a b"}),
            "mask/scale\na b\n--keep-fp32 'mask/scale' --keep-fp32 'a b'\n");
  EXPECT_EQ(keep_fp32_clipboard({}), "");
}

TEST(WhatIfTest, ChangesShowUnsafeCountsAndOutputErrorsBeforeAndAfter) {
  report::TargetSummary before, after;
  before.unsafe_nodes = {"a", "b", "c", "d"};
  before.outputs = {{"logits", 1, 0.32, 0.5, 3}};
  after.unsafe_nodes = {"a"};
  after.outputs = {{"logits", 1e-3, 4.1e-4, 1, 60}};
  const std::vector<std::string> lines = what_if_changes({{"fp16", before}}, {{"fp16", after}, {"bf16", after}});
  ASSERT_EQ(lines.size(), 1u);  // bf16 has no run before to compare with
  EXPECT_EQ(lines[0], "fp16: unsafe 4 -> 1; output logits max_rel_err 3.2e-01 -> 4.1e-04");
}

// A runner that reports `nodes` node runs, taking `node_time` each, and returns a report naming its pins.
AuditRunner scripted_runner(int nodes, std::chrono::milliseconds node_time, std::atomic<int>* runs_ended = nullptr) {
  return
      [=](const std::vector<std::string>& keep_fp32, const AuditProgressFn& progress, const std::atomic<bool>& cancel) {
        const auto snapshot = [&] {
          report::Report r = make_report();
          r.config.keep_fp32 = keep_fp32;
          return r;
        };
        struct Count {
          std::atomic<int>* ended;
          ~Count() {
            if (ended) ++*ended;
          }
        } count{runs_ended};
        for (int done = 0; done <= nodes; ++done) {
          if (cancel) throw std::runtime_error("cancelled");
          progress(done, nodes, snapshot);
          if (done < nodes) std::this_thread::sleep_for(node_time);
        }
        return snapshot();
      };
}

TEST(LiveAuditTest, PublishesTheStartThenAtMostEveryIntervalThenTheFinalReport) {
  LiveAudit audit(scripted_runner(8, std::chrono::milliseconds(100)));
  audit.start({"/dec/Add"});
  std::vector<int64_t> published;
  bool got_final = false;
  while (!got_final) {
    if (std::optional<AuditSnapshot> snapshot = audit.take_snapshot()) {
      got_final = snapshot->is_final();
      published.push_back(snapshot->node_runs_done);
      if (got_final) {
        EXPECT_EQ(snapshot->report.config.keep_fp32, std::vector<std::string>{"/dec/Add"});
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_GE(published.size(), 3u);
  EXPECT_EQ(published.front(), 0);  // the nodes before any has run: the window fills at once
  EXPECT_EQ(published.back(), ReportModel::kComplete);
  EXPECT_LE(published.size(), 2u + 800 / LiveAudit::kPublishInterval.count() + 1);  // 8 x 100 ms, one per interval
  EXPECT_TRUE(audit.finished());
  const AuditStatus status = audit.status();
  EXPECT_EQ(status.done, 8);
  EXPECT_EQ(status.total, 8);
  EXPECT_TRUE(status.error.empty());
}

TEST(LiveAuditTest, AFailedRunKeepsItsMessage) {
  LiveAudit audit(
      [](const std::vector<std::string>&, const AuditProgressFn&, const std::atomic<bool>&) -> report::Report {
        throw std::runtime_error("m.onnx: input 'x' was not given");
      });
  audit.start({});
  while (!audit.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(audit.status().error, "m.onnx: input 'x' was not given");
  EXPECT_FALSE(audit.take_snapshot());
}

TEST(LiveAuditTest, ARestartCancelsTheRunningAuditAndOnlyTheNewOneFinishes) {
  std::atomic<int> runs_ended{0};
  LiveAudit audit(scripted_runner(1000, std::chrono::milliseconds(10), &runs_ended));
  audit.start({});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto restarted = std::chrono::steady_clock::now();
  audit.start({"/enc/MatMul"});
  EXPECT_LT(std::chrono::steady_clock::now() - restarted, std::chrono::seconds(1)) << "the first run was not cancelled";
  EXPECT_EQ(runs_ended, 1);
  EXPECT_FALSE(audit.finished());
  EXPECT_TRUE(audit.status().error.empty()) << "a cancelled run is no failure";
}

TEST(LiveAuditTest, DestroyingItStopsTheAuditPromptly) {
  std::atomic<int> runs_ended{0};
  auto audit = std::make_unique<LiveAudit>(scripted_runner(100000, std::chrono::milliseconds(10), &runs_ended));
  audit->start({});
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto closed = std::chrono::steady_clock::now();
  audit.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - closed, std::chrono::seconds(1));
  EXPECT_EQ(runs_ended, 1);
}

}  // namespace
}  // namespace mpa::ui
