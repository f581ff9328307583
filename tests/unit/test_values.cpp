// Sequence and optional values (tensor/value.h) through the executor: graph inputs and outputs of those
// types, a tensor fed where a sequence is declared, an omitted optional input, sequences carried by a Loop,
// tensor-only graphs untouched, and the audit of a graph with sequences inside.
#include <gtest/gtest.h>

#include "audit/auditor.h"
#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"

using namespace mpa;
using mpa::test::ModelBuilder;
using mpa::test::SubgraphBuilder;

namespace {

// Declares `v` a sequence(tensor(float)) (or an optional(tensor(float))).
void declare(onnx::ValueInfoProto* v, const std::string& name, bool sequence) {
  v->set_name(name);
  onnx::TypeProto* held = sequence ? v->mutable_type()->mutable_sequence_type()->mutable_elem_type()
                                   : v->mutable_type()->mutable_optional_type()->mutable_elem_type();
  held->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

// s (a sequence input) -> SequenceLength -> n; SequenceAt(s, -1) -> last; SequenceInsert(s, x) -> grown (a
// sequence output).
Model sequence_model() {
  ModelBuilder b(17);
  declare(b.graph().add_input(), "s", true);
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.int64_initializer("minus_one", {}, {-1});
  b.node("SequenceLength", {"s"}, {"n"});
  b.node("SequenceAt", {"s", "minus_one"}, {"last"});
  b.node("SequenceInsert", {"s", "x"}, {"grown"});
  b.output("n", onnx::TensorProto::INT64);
  b.output("last");
  declare(b.graph().add_output(), "grown", true);
  return load_model_from_bytes(b.bytes(), ".", "sequence.onnx");
}

Tensor vec(std::vector<float> v) { return Tensor::from_vector<float>(v, {int64_t(v.size())}); }

}  // namespace

TEST(Values, SequenceInputsAndOutputsTravelBesideTensors) {
  const Model model = sequence_model();
  ASSERT_TRUE(model.graph->inputs[0].boxed.has_value());
  EXPECT_EQ(*model.graph->inputs[0].boxed, Value::Kind::Sequence);
  Session session(model.graph);
  ValueMap values{{"s", Value::make_sequence(DType::Float32, {vec({1, 2}), vec({3, 4})})}};
  const TensorMap out = session.run({{"x", vec({5, 6})}}, {}, nullptr, nullptr, nullptr, &values);
  EXPECT_EQ(out.at("n").data<int64_t>()[0], 2);
  EXPECT_EQ(out.at("last").data<float>()[1], 4.f);
  EXPECT_EQ(out.count("grown"), 0u);
  ASSERT_EQ(values.count("grown"), 1u);
  const Value& grown = *values.at("grown");
  ASSERT_EQ(grown.elements.size(), 3u);
  EXPECT_EQ(grown.elements[2].data<float>()[0], 5.f);
  // Nothing is copied: the sequence holds the fed tensors themselves.
  EXPECT_EQ(values.count("s"), 0u);
}

TEST(Values, ATensorFedToASequenceInputIsRefusedNamingIt) {
  Session session(sequence_model().graph);
  try {
    session.run({{"x", vec({5, 6})}, {"s", vec({1})}});
    FAIL() << "a tensor was taken for a sequence";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 's' expects sequence(tensor(float32)), got a tensor"),
              std::string::npos)
        << e.what();
  }
  // An optional given for a sequence is refused too.
  ValueMap values{{"s", Value::make_optional(vec({1}))}};
  EXPECT_THROW(session.run({{"x", vec({5, 6})}}, {}, nullptr, nullptr, nullptr, &values), Error);
}

TEST(Values, AnOmittedOptionalInputIsAnEmptyOptional) {
  ModelBuilder b(18);
  declare(b.graph().add_input(), "o", false);
  b.node("OptionalHasElement", {"o"}, {"has"});
  b.output("has", onnx::TensorProto::BOOL);
  Session session(load_model_from_bytes(b.bytes(), ".", "optional.onnx").graph);
  EXPECT_FALSE(session.run({}).at("has").data<bool>()[0]);
  ValueMap values{{"o", Value::make_optional(vec({1}))}};
  EXPECT_TRUE(session.run({}, {}, nullptr, nullptr, nullptr, &values).at("has").data<bool>()[0]);
}

// Loop: the body appends i * x to a carried sequence, which ConcatFromSequence joins after the loop.
TEST(Values, ALoopCarriesASequence) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.int64_initializer("trips", {}, {3});
  b.node("SequenceConstruct", {"x"}, {"s0"});
  SubgraphBuilder body("body");
  body.input("i", onnx::TensorProto::INT64, {});
  body.input("cond_in", onnx::TensorProto::BOOL, {});
  declare(body.graph().add_input(), "seq_in", true);
  body.node("Identity", {"cond_in"}, {"cond_out"});
  ModelBuilder::set_int(body.node("Cast", {"i"}, {"i_f"}), "to", onnx::TensorProto::FLOAT);
  body.node("Mul", {"x", "i_f"}, {"scaled"});
  body.node("SequenceInsert", {"seq_in", "scaled"}, {"seq_out"});
  body.output("cond_out", onnx::TensorProto::BOOL);
  declare(body.graph().add_output(), "seq_out", true);
  ModelBuilder::set_graph(b.node("Loop", {"trips", "", "s0"}, {"s"}), "body", body.graph());
  ModelBuilder::set_int(b.node("ConcatFromSequence", {"s"}, {"y"}), "axis", 0);
  b.output("y");
  Session session(load_model_from_bytes(b.bytes(), ".", "loop.onnx").graph);
  const Tensor y = session.run({{"x", vec({1, 2})}}).at("y");
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + y.numel()),
            (std::vector<float>{1, 2, 0, 0, 1, 2, 2, 4}));
}

TEST(Values, TensorOnlyGraphsGiveNoValuesAndHideNothing) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  Session session(load_model_from_bytes(b.bytes(), ".", "relu.onnx").graph);
  ValueMap values;
  const TensorMap out = session.run({{"x", vec({-1, 1})}}, {}, nullptr, nullptr, nullptr, &values);
  EXPECT_TRUE(values.empty());
  EXPECT_EQ(out.at("y").data<float>()[1], 1.f);
}

// The audit runs a graph with a sequence inside: the nodes that meet it are neither rerun nor probed, the
// tensor nodes around them are.
TEST(Values, TheAuditRunsAroundSequences) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {4, 3});
  b.node("Mul", {"x", "x"}, {"sq"}, "square");
  ModelBuilder::set_int(b.node("SplitToSequence", {"sq"}, {"s"}, "split"), "axis", 0);
  ModelBuilder::set_int(b.node("ConcatFromSequence", {"s"}, {"joined"}, "join"), "axis", 1);
  b.node("Exp", {"joined"}, {"y"}, "exp");
  b.output("y");
  const Model model = load_model_from_bytes(b.bytes(), ".", "split.onnx");
  Auditor auditor(model.graph, {});
  auditor.observe({{"x", Tensor::from_vector<float>(
                             {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.f, 1.1f, 1.2f}, {4, 3})}},
                  0);
  report::Report rep;
  rep.config.targets = {"fp16"};
  auditor.fill(rep);
  bool saw_exp = false;
  for (const auto& n : rep.nodes)
    if (n.name == "exp") {
      saw_exp = true;
      EXPECT_GT(n.tensors.at(0).targets.at("fp16").isolated.compared, 0);
    }
  EXPECT_TRUE(saw_exp);
}
