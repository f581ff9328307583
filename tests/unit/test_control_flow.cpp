// If and Loop run their subgraphs through the executor: outer-scope values, loop-carried state, scan
// outputs, early exit, and the node's precision applied inside the subgraph; the audit runs them too.
#include <gtest/gtest.h>

#include "audit/auditor.h"
#include "model/loader.h"
#include "runtime/session.h"
#include "support/control_flow_models.h"
#include "support/model_builder.h"

using namespace mpa;

namespace {

using mpa::test::if_model;
using mpa::test::loop_model;
using mpa::test::loop_with_if_model;
using mpa::test::ModelBuilder;
using mpa::test::SubgraphBuilder;

// Scan as opset 8 defines it: batch-major inputs, per-row lengths {3, 1}, the scan input read in reverse;
// the body accumulates the state and emits it per step. The expected values are what onnxruntime gives.
Model scan8_model() {
  ModelBuilder b(8);
  b.input("lens", onnx::TensorProto::INT64, {2});
  b.input("state0", onnx::TensorProto::FLOAT, {2, 2});
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 2});
  SubgraphBuilder body("body");
  body.input("state_in", onnx::TensorProto::FLOAT, {2});
  body.input("x_t", onnx::TensorProto::FLOAT, {2});
  body.node("Add", {"state_in", "x_t"}, {"state_out"}, "accumulate");
  body.node("Identity", {"state_out"}, {"emitted"}, "emit");
  body.output("state_out", onnx::TensorProto::FLOAT, {2});
  body.output("emitted", onnx::TensorProto::FLOAT, {2});
  onnx::NodeProto& scan = b.node("Scan", {"lens", "state0", "x"}, {"final", "history"}, "scan");
  ModelBuilder::set_graph(scan, "body", body.graph());
  ModelBuilder::set_ints(scan, "directions", {1});
  auto* count = scan.add_attribute();
  count->set_name("num_scan_inputs");
  count->set_type(onnx::AttributeProto::INT);
  count->set_i(1);
  b.output("final");
  b.output("history");
  return load_model_from_bytes(b.bytes(), ".", "scan8.onnx");
}

report::Report audit_report(const Model& model, const std::vector<TensorMap>& samples, AuditOptions options = {}) {
  Auditor auditor(model.graph, options);
  for (size_t s = 0; s < samples.size(); ++s) auditor.observe(samples[s], static_cast<int64_t>(s));
  report::Report rep;
  rep.config.targets = {"fp16"};
  auditor.fill(rep);
  return rep;
}

const report::NodeStats& node_named(const report::Report& rep, const std::string& name) {
  for (const auto& n : rep.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("the report has no node " + name);
}

}  // namespace

TEST(ControlFlow, IfReadsOuterValuesAndRunsTheTakenBranch) {
  const Model model = if_model();
  Session session(model.graph);
  const Tensor up = session.run({{"x", Tensor::from_vector<float>({1, 2, 3, -1}, {4})}}).at("y");
  EXPECT_FLOAT_EQ(up.data<float>()[1], 2 * 1.0001f);
  const Tensor down = session.run({{"x", Tensor::from_vector<float>({-1, -2, -3, 1}, {4})}}).at("y");
  EXPECT_FLOAT_EQ(down.data<float>()[1], -2 * -1.0001f);
}

// In an fp16 session the branch's Mul is an fp16 op: 1.0001 rounds to 1 on the fp16 grid.
TEST(ControlFlow, SubgraphsRunInTheNodesPrecision) {
  const Model model = if_model();
  SessionOptions fp16;
  fp16.precision = Format::FP16;
  const Tensor y = Session(model.graph, fp16).run({{"x", Tensor::from_vector<float>({1, 2, 3, -1}, {4})}}).at("y");
  EXPECT_EQ(y.data<float>()[1], 2.f);
  EXPECT_EQ(y.data<float>()[2], 3.f);
}

TEST(ControlFlow, LoopCarriesStateStacksScanOutputsAndStopsOnItsCondition) {
  const Model model = loop_model();
  const TensorMap out = Session(model.graph).run({{"x", Tensor::from_vector<float>({1.5f, -2}, {2})}});
  // Iterations 0, 1, 2 run (the condition computed in iteration 2 is false): three accumulations.
  const Tensor& acc = out.at("acc");
  EXPECT_FLOAT_EQ(acc.data<float>()[0], 4.5f);
  EXPECT_FLOAT_EQ(acc.data<float>()[1], -6.f);
  const Tensor& history = out.at("history");
  ASSERT_EQ(history.shape(), (Shape{3, 2}));
  EXPECT_FLOAT_EQ(history.data<float>()[0], 1.5f);
  EXPECT_FLOAT_EQ(history.data<float>()[2], 3.f);
  EXPECT_FLOAT_EQ(history.data<float>()[4], 4.5f);
}

TEST(ControlFlow, Scan8RunsEachBatchRowForItsLengthAndPadsWithZeros) {
  const Model model = scan8_model();
  const TensorMap out =
      Session(model.graph)
          .run({{"lens", Tensor::from_vector<int64_t>({3, 1}, {2})},
                {"state0", Tensor::from_vector<float>({0, 0, 0, 0}, {2, 2})},
                {"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}, {2, 3, 2})}});
  const Tensor& final_state = out.at("final");
  EXPECT_EQ(std::vector<float>(final_state.data<float>(), final_state.data<float>() + 4),
            (std::vector<float>{9, 12, 10, 20}));
  const Tensor& history = out.at("history");
  ASSERT_EQ(history.shape(), (Shape{2, 3, 2}));
  // Row 0 reads x[0] backwards over its 3 steps; row 1 reads only its first step, then zeros.
  EXPECT_EQ(std::vector<float>(history.data<float>(), history.data<float>() + 12),
            (std::vector<float>{5, 6, 8, 10, 9, 12, 10, 20, 0, 0, 0, 0}));
}

TEST(ControlFlow, AuditMeasuresTheIfNodeInEveryStream) {
  const report::Report rep = audit_report(if_model(), {{{"x", Tensor::from_vector<float>({1, 2, 3, -1}, {4})}}});
  const report::TensorTarget& t = node_named(rep, "branch").tensors.at(0).targets.at("fp16");
  EXPECT_EQ(t.isolated.compared, 4);
  EXPECT_EQ(t.propagated.compared, 4);
  EXPECT_GT(t.isolated.max_abs, 0);  // 1.0001 * x in fp16 loses the 1e-4
}

// Each branch's nodes precede the If, under its path, measured on the samples that took that branch.
TEST(ControlFlow, AuditReportsNodesInsideBranchesUnderTheirPath) {
  const report::Report rep = audit_report(if_model(), {{{"x", Tensor::from_vector<float>({1, 2, 3, -1}, {4})}},
                                                       {{"x", Tensor::from_vector<float>({1, 1, 1, 1}, {4})}},
                                                       {{"x", Tensor::from_vector<float>({-1, -2, -3, 1}, {4})}}});
  ASSERT_EQ(rep.nodes.size(), 5u);
  EXPECT_EQ(rep.nodes[2].name, "branch/then/then_mul");
  EXPECT_EQ(rep.nodes[2].scope, "branch/then");
  EXPECT_EQ(rep.nodes[3].name, "branch/else/else_mul");
  EXPECT_EQ(rep.nodes[4].name, "branch");
  EXPECT_TRUE(rep.nodes[4].scope.empty());
  EXPECT_EQ(rep.nodes[2].executions, 2);
  EXPECT_EQ(rep.nodes[3].executions, 1);
  EXPECT_EQ(rep.nodes[4].executions, 3);
  for (size_t i = 0; i < rep.nodes.size(); ++i) EXPECT_EQ(rep.nodes[i].index, int64_t(i));
  const report::TensorStats& then_y = rep.nodes[2].tensors.at(0);
  EXPECT_EQ(then_y.range.count, 8);
  EXPECT_FLOAT_EQ(then_y.range.max, 3 * 1.0001f);
  // In fp16, 1.0001 is 1: the branch's Mul alone and the whole fp16 run both give x exactly.
  const report::TensorTarget& t = then_y.targets.at("fp16");
  EXPECT_EQ(t.propagated.compared, 8);
  EXPECT_EQ(t.isolated.compared, 8);
  EXPECT_DOUBLE_EQ(t.propagated.max_abs, double(3 * 1.0001f) - 3);
  EXPECT_DOUBLE_EQ(t.isolated.max_abs, double(3 * 1.0001f) - 3);
  EXPECT_EQ(rep.nodes[3].tensors.at(0).range.count, 4);
}

TEST(ControlFlow, AuditAggregatesLoopBodyNodesOverIterations) {
  const report::Report rep = audit_report(loop_model(), {{{"x", Tensor::from_vector<float>({1.5f, -2}, {2})}}});
  const report::NodeStats& add = node_named(rep, "loop/body/accumulate");
  EXPECT_EQ(add.scope, "loop/body");
  EXPECT_EQ(add.executions, 3);
  const report::TensorStats& acc = add.tensors.at(0);
  EXPECT_EQ(acc.shape, (Shape{2}));
  EXPECT_EQ(acc.range.count, 6);
  EXPECT_DOUBLE_EQ(acc.range.max, 4.5);
  EXPECT_DOUBLE_EQ(acc.range.min, -6);
  EXPECT_EQ(acc.targets.at("fp16").propagated.compared, 6);
  EXPECT_EQ(acc.targets.at("fp16").propagated.max_abs, 0);                       // exact in fp16
  EXPECT_FALSE(node_named(rep, "loop/body/keep_going").tensors.at(0).measured);  // a bool
}

// The unsafe node is named by its full path; the fix proposed is its top-level owner.
TEST(ControlFlow, AuditNamesTheUnsafeNodeInsideAnIfInsideALoop) {
  const report::Report rep =
      audit_report(loop_with_if_model(), {{{"x", Tensor::from_vector<float>({1, -2, 0.5f, 3}, {4})}}});
  const report::NodeStats& scale = node_named(rep, "loop/body/choose/then/scale_up");
  EXPECT_EQ(scale.scope, "loop/body/choose/then");
  EXPECT_EQ(scale.executions, 1);
  EXPECT_EQ(scale.tensors.at(0).targets.at("fp16").fit.overflow, 3);  // 1e5, -2e5, 3e5
  std::vector<std::string> codes;
  for (const auto& r : scale.targets.at("fp16").reasons) codes.push_back(r.code);
  // 1e5 itself is Inf in fp16, and makes all four products Inf.
  EXPECT_EQ(codes, (std::vector<std::string>{"overflow", "nonfinite", "weight_overflow"}));
  EXPECT_EQ(scale.targets.at("fp16").verdict, report::Verdict::Unsafe);
  const report::NodeStats& pass = node_named(rep, "loop/body/choose/else/pass");
  EXPECT_EQ(pass.executions, 2);
  // The fp16 run (x times an infinite 1e5) carries four infinities through both later trips; alone, the
  // node is fed the reference state stored in fp16, where 5e4 fits and three values overflow.
  EXPECT_EQ(pass.tensors.at(0).targets.at("fp16").propagated.inf, 8);
  EXPECT_EQ(pass.tensors.at(0).targets.at("fp16").isolated.inf, 6);
  const report::TargetSummary& s = rep.summary.at("fp16");
  EXPECT_EQ(s.first_unsafe, "loop/body/choose/then/scale_up");
  EXPECT_EQ(s.unsafe_nodes.front(), "loop/body/choose/then/scale_up");
  EXPECT_EQ(s.keep_fp32, (std::vector<std::string>{"loop", "negate"}));  // the loop's output overflows too
  EXPECT_FALSE(s.pass);
}

TEST(ControlFlow, KeepingTheLoopInFp32KeepsItsSubgraphsToo) {
  AuditOptions options;
  options.keep_fp32 = {"loop"};
  const report::Report rep =
      audit_report(loop_with_if_model(), {{{"x", Tensor::from_vector<float>({1, -2, 0.5f, 3}, {4})}}}, options);
  EXPECT_EQ(rep.config.keep_fp32, (std::vector<std::string>{"loop"}));
  const report::NodeStats& scale = node_named(rep, "loop/body/choose/then/scale_up");
  EXPECT_TRUE(scale.targets.at("fp16").kept_fp32);
  EXPECT_EQ(scale.targets.at("fp16").verdict, report::Verdict::Safe);
  EXPECT_EQ(scale.tensors.at(0).targets.at("fp16").propagated.max_abs, 0);
  // Neg reads 3e5 in fp16 where the loop hands its fp32 result over: the overflow moves there.
  const report::NodeStats& negate = node_named(rep, "negate");
  EXPECT_FALSE(negate.targets.at("fp16").kept_fp32);
  EXPECT_GT(negate.tensors.at(0).targets.at("fp16").propagated.inf, 0);
  EXPECT_EQ(node_named(rep, "loop").targets.at("fp16").verdict, report::Verdict::Unsafe);
  EXPECT_NE(node_named(rep, "loop").targets.at("fp16").reasons.at(0).message.find("where 'negate' reads it in fp16"),
            std::string::npos);
}

TEST(ControlFlow, KeepFp32NamesOnlyTopLevelNodes) {
  AuditOptions options;
  options.keep_fp32 = {"loop/body/choose"};
  EXPECT_THROW(Auditor(loop_with_if_model().graph, options), Error);
}
