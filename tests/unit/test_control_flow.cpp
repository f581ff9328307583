// If and Loop run their subgraphs through the executor: outer-scope values, loop-carried state, scan
// outputs, early exit, and the node's precision applied inside the subgraph; the audit runs them too.
#include <gtest/gtest.h>

#include "audit/auditor.h"
#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"

using namespace mpa;

namespace {

void add_value_info(onnx::ValueInfoProto* v, const std::string& name, int32_t type, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out, const std::string& name) {
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

void set_graph(onnx::NodeProto* n, const std::string& key, const onnx::GraphProto& g) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

// y = If(x_sum > 0) then x * scale else x * -scale, where x and scale come from the outer graph.
Model if_model() {
  mpa::test::ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.initializer("scale", {1}, {1.0001f});
  b.initializer("minus", {1}, {-1.0001f});
  b.node("ReduceSum", {"x"}, {"sum"}, "sum");
  b.initializer("zero", {1}, {0.f});
  b.node("Greater", {"sum", "zero"}, {"positive"}, "positive");
  onnx::GraphProto then_branch, else_branch;
  then_branch.set_name("then");
  add_node(then_branch, "Mul", {"x", "scale"}, {"then_y"}, "then_mul");
  add_value_info(then_branch.add_output(), "then_y", onnx::TensorProto::FLOAT, {4});
  else_branch.set_name("else");
  add_node(else_branch, "Mul", {"x", "minus"}, {"else_y"}, "else_mul");
  add_value_info(else_branch.add_output(), "else_y", onnx::TensorProto::FLOAT, {4});
  onnx::NodeProto& node = b.node("If", {"positive"}, {"y"}, "branch");
  set_graph(&node, "then_branch", then_branch);
  set_graph(&node, "else_branch", else_branch);
  b.output("y");
  return load_model_from_bytes(b.bytes(), ".", "if.onnx");
}

// Loop of at most M = 5 trips: acc += x (outer), scan output acc, stop once iter >= limit (outer).
Model loop_model() {
  mpa::test::ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.int64_initializer("trips", {}, {5});
  b.int64_initializer("limit", {}, {2});
  b.initializer("acc0", {2}, {0.f, 0.f});
  onnx::GraphProto body;
  body.set_name("body");
  add_value_info(body.add_input(), "iter", onnx::TensorProto::INT64, {});
  add_value_info(body.add_input(), "cond_in", onnx::TensorProto::BOOL, {});
  add_value_info(body.add_input(), "acc_in", onnx::TensorProto::FLOAT, {2});
  add_node(body, "Add", {"acc_in", "x"}, {"acc_out"}, "accumulate");
  add_node(body, "Less", {"iter", "limit"}, {"cond_out"}, "keep_going");
  add_node(body, "Identity", {"acc_out"}, {"acc_scan"}, "record");
  add_value_info(body.add_output(), "cond_out", onnx::TensorProto::BOOL, {});
  add_value_info(body.add_output(), "acc_out", onnx::TensorProto::FLOAT, {2});
  add_value_info(body.add_output(), "acc_scan", onnx::TensorProto::FLOAT, {2});
  b.initializer("unused", {1}, {0.f});
  onnx::NodeProto& node = b.node("Loop", {"trips", "", "acc0"}, {"acc", "history"}, "loop");
  set_graph(&node, "body", body);
  b.output("acc");
  b.output("history");
  return load_model_from_bytes(b.bytes(), ".", "loop.onnx");
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

TEST(ControlFlow, AuditMeasuresTheIfNodeInEveryStream) {
  const Model model = if_model();
  Auditor auditor(model.graph, AuditOptions{});
  auditor.observe({{"x", Tensor::from_vector<float>({1, 2, 3, -1}, {4})}}, 0);
  report::Report rep;
  rep.config.targets = {"fp16"};
  auditor.fill(rep);
  const report::NodeStats& branch = rep.nodes.back();
  ASSERT_EQ(branch.name, "branch");
  const report::TensorTarget& t = branch.tensors.at(0).targets.at("fp16");
  EXPECT_EQ(t.isolated.compared, 4);
  EXPECT_EQ(t.propagated.compared, 4);
  EXPECT_GT(t.isolated.max_abs, 0);  // 1.0001 * x in fp16 loses the 1e-4
}
