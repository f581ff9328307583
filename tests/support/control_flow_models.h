// Small models with control flow (If, Loop, and an If inside a Loop) whose subgraphs read outer values,
// for the tests of the executor, the audit and the backends.
#pragma once
#include "model/loader.h"
#include "support/model_builder.h"

namespace mpa::test {

// y = If(x_sum > 0) then x * scale else x * -scale, where x and scale come from the outer graph.
inline Model if_model() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.initializer("scale", {1}, {1.0001f});
  b.initializer("minus", {1}, {-1.0001f});
  b.node("ReduceSum", {"x"}, {"sum"}, "sum");
  b.initializer("zero", {1}, {0.f});
  b.node("Greater", {"sum", "zero"}, {"positive"}, "positive");
  SubgraphBuilder then_branch("then"), else_branch("else");
  then_branch.node("Mul", {"x", "scale"}, {"then_y"}, "then_mul");
  then_branch.output("then_y", onnx::TensorProto::FLOAT, {4});
  else_branch.node("Mul", {"x", "minus"}, {"else_y"}, "else_mul");
  else_branch.output("else_y", onnx::TensorProto::FLOAT, {4});
  onnx::NodeProto& node = b.node("If", {"positive"}, {"y"}, "branch");
  ModelBuilder::set_graph(node, "then_branch", then_branch.graph());
  ModelBuilder::set_graph(node, "else_branch", else_branch.graph());
  b.output("y");
  return load_model_from_bytes(b.bytes(), ".", "if.onnx");
}

// Loop of at most M = 5 trips: acc += x (outer), scan output acc, stop once iter >= limit (outer).
inline Model loop_model() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.int64_initializer("trips", {}, {5});
  b.int64_initializer("limit", {}, {2});
  b.initializer("acc0", {2}, {0.f, 0.f});
  SubgraphBuilder body("body");
  body.input("iter", onnx::TensorProto::INT64, {});
  body.input("cond_in", onnx::TensorProto::BOOL, {});
  body.input("acc_in", onnx::TensorProto::FLOAT, {2});
  body.node("Add", {"acc_in", "x"}, {"acc_out"}, "accumulate");
  body.node("Less", {"iter", "limit"}, {"cond_out"}, "keep_going");
  body.node("Identity", {"acc_out"}, {"acc_scan"}, "record");
  body.output("cond_out", onnx::TensorProto::BOOL);
  body.output("acc_out", onnx::TensorProto::FLOAT, {2});
  body.output("acc_scan", onnx::TensorProto::FLOAT, {2});
  b.initializer("unused", {1}, {0.f});
  onnx::NodeProto& node = b.node("Loop", {"trips", "", "acc0"}, {"acc", "history"}, "loop");
  ModelBuilder::set_graph(node, "body", body.graph());
  b.output("acc");
  b.output("history");
  return load_model_from_bytes(b.bytes(), ".", "loop.onnx");
}

// Three trips of a Loop whose body holds an If: the first trip scales the state by 1e5 (beyond fp16's
// 65504 for |x| > 0.66), the others pass it on. The condition reads `one` from the main graph.
inline Model loop_with_if_model() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.int64_initializer("trips", {}, {3});
  b.int64_initializer("one", {}, {1});
  b.initializer("big", {}, {1e5f});
  SubgraphBuilder then_branch("then"), else_branch("else"), body("body");
  then_branch.node("Mul", {"state_in", "big"}, {"scaled"}, "scale_up");
  then_branch.output("scaled", onnx::TensorProto::FLOAT, {4});
  else_branch.node("Identity", {"state_in"}, {"passed"}, "pass");
  else_branch.output("passed", onnx::TensorProto::FLOAT, {4});
  body.input("iter", onnx::TensorProto::INT64, {});
  body.input("cond_in", onnx::TensorProto::BOOL, {});
  body.input("state_in", onnx::TensorProto::FLOAT, {4});
  body.node("Less", {"iter", "one"}, {"first"}, "is_first");
  onnx::NodeProto& choose = body.node("If", {"first"}, {"state_out"}, "choose");
  ModelBuilder::set_graph(choose, "then_branch", then_branch.graph());
  ModelBuilder::set_graph(choose, "else_branch", else_branch.graph());
  body.node("Identity", {"cond_in"}, {"cond_out"}, "again");
  body.output("cond_out", onnx::TensorProto::BOOL);
  body.output("state_out", onnx::TensorProto::FLOAT, {4});
  onnx::NodeProto& loop = b.node("Loop", {"trips", "", "x"}, {"y"}, "loop");
  ModelBuilder::set_graph(loop, "body", body.graph());
  b.node("Neg", {"y"}, {"z"}, "negate");
  b.output("z");
  return load_model_from_bytes(b.bytes(), ".", "loop_with_if.onnx");
}

}  // namespace mpa::test
