// Verdicts by consequence: saturation that downstream nodes absorb is a warn naming where it went, harm
// that reaches the outputs is unsafe with its root and the node where it appears, and the keep-fp32
// advice is verified by auditing again with it applied. Each model is the pattern in small.
#include <gtest/gtest.h>

#include <cfloat>

#include "support/audit_helpers.h"

using namespace mpa;
using namespace mpa::test;

namespace {

constexpr float kLowest = -FLT_MAX;  // what exporters fill masks with (torch.finfo(float32).min)

report::Verdict verdict_of(const Audited& a, const std::string& node) { return a.node(node).targets.at("fp16").verdict; }

// A benign case: the audit passes with the saturating node a warn whose reason names the absorber.
void expect_absorbed(const Audited& a, const std::string& node, const std::string& absorber) {
  EXPECT_TRUE(a.fp16().pass) << a.fp16().unsafe_nodes.front() << ": " << a.reasons(a.fp16().unsafe_nodes.front());
  EXPECT_EQ(verdict_of(a, node), report::Verdict::Warn) << a.reasons(node);
  EXPECT_NE(a.reasons(node).find("absorbed by '" + absorber + "'"), std::string::npos) << a.reasons(node);
  EXPECT_NE(a.node(node).targets.at("fp16").consequence.find("absorbed by '" + absorber + "'"), std::string::npos);
  EXPECT_TRUE(a.fp16().keep_fp32.empty());
  EXPECT_TRUE(a.fp16().advice.verified);
}

// A harmful case: the audit fails, and its advice, applied, passes.
void expect_verified_advice(const Audited& a, const std::vector<std::string>& advice) {
  EXPECT_FALSE(a.fp16().pass);
  EXPECT_TRUE(a.fp16().advice.verified) << a.fp16().advice.note;
  EXPECT_GE(a.fp16().advice.rounds, 1);
  EXPECT_EQ(a.fp16().keep_fp32, advice);
}

ModelBuilder& attention_inputs(ModelBuilder& b) {
  b.input("scores", onnx::TensorProto::FLOAT, {1, 2, 8, 8});
  b.input("mask", onnx::TensorProto::FLOAT, {1, 1, 1, 8});
  return b;
}

TensorMap attention_sample(std::vector<float> mask = {1, 1, 1, 1, 1, 0, 0, 0}) {
  return {{"scores", normal({1, 2, 8, 8}, 3, 0, 2)}, {"mask", Tensor::from_vector<float>(mask, {1, 1, 1, 8})}};
}

onnx::NodeProto& constant(ModelBuilder& b, const std::string& name, float value) {
  onnx::NodeProto& n = b.node("Constant", {}, {name}, name);
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_float_data(value);
  return n;
}

}  // namespace

// transformers 5: Where(mask, 0, lowest). -3.4e38 is -inf in fp16, and Softmax makes both 0.
TEST(Consequence, WhereMaskWithFloatLowestIsAbsorbedBySoftmax) {
  ModelBuilder b;
  attention_inputs(b);
  b.initializer("zero", {}, {0.f});
  b.initializer("lowest", {}, {kLowest});
  ModelBuilder::set_int(b.node("Cast", {"mask"}, {"keep"}, "to_bool"), "to", onnx::TensorProto::BOOL);
  b.node("Where", {"keep", "zero", "lowest"}, {"bias"}, "mask_bias");
  b.node("Add", {"scores", "bias"}, {"masked"}, "apply_mask");
  b.node("Softmax", {"masked"}, {"probs"}, "softmax");
  b.output("probs");
  const Audited a = audit_with_advice(b, {attention_sample(), attention_sample({1, 1, 0, 0, 0, 0, 0, 0})});
  expect_absorbed(a, "mask_bias", "softmax");
  expect_absorbed(a, "apply_mask", "softmax");
  EXPECT_TRUE(a.has_reason("mask_bias", "weight_overflow", report::Verdict::Warn)) << a.reasons("mask_bias");
  const report::Consequence& c = a.node("mask_bias").tensors[0].targets.at("fp16").consequence;
  EXPECT_EQ(c.traced, 2);
  EXPECT_EQ(c.absorbed, 2);
  EXPECT_TRUE(c.outputs.empty());
  EXPECT_LT(a.fp16().outputs.at(0).max_abs_err, 1e-3);
}

// An additive -1e9 mask fed as a graph input: beyond fp16 as read, absorbed where Softmax reads it.
TEST(Consequence, AdditiveMinusOneBillionMaskInputIsAbsorbed) {
  ModelBuilder b;
  attention_inputs(b);
  b.node("Add", {"scores", "mask"}, {"masked"}, "apply_mask");
  b.node("Softmax", {"masked"}, {"probs"}, "softmax");
  b.output("probs");
  const Audited a = audit_with_advice(b, {attention_sample({0, 0, 0, -1e9f, -1e9f, -1e9f, -1e9f, -1e9f})});
  expect_absorbed(a, "apply_mask", "softmax");
  EXPECT_NE(a.reasons("apply_mask").find("graph input 'mask'"), std::string::npos) << a.reasons("apply_mask");
  EXPECT_EQ(a.report.inputs.at(1).targets.at("fp16").consequence.absorbed, 1);
}

// Padding with -1e6 before a max pool: -inf in fp16, never the maximum of a window with a real value.
TEST(Consequence, MaxPoolOverMinusOneMillionPaddingIsAbsorbed) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 8, 8});
  b.int64_initializer("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  b.initializer("fill", {}, {-1e6f});
  b.node("Pad", {"x", "pads", "fill"}, {"padded"}, "pad");
  onnx::NodeProto& pool = b.node("MaxPool", {"padded"}, {"y"}, "maxpool");
  ModelBuilder::set_ints(pool, "kernel_shape", {3, 3});
  b.output("y");
  const Audited a = audit_with_advice(b, {{{"x", normal({1, 1, 8, 8}, 1, 0, 5)}}});
  expect_absorbed(a, "pad", "maxpool");
}

// Logits scaled past 65504: Sigmoid and Tanh of +-inf are what they are of +-1e5, bit for bit.
TEST(Consequence, SaturatedSigmoidAndTanhAbsorbOverflowedLogits) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("gain", {}, {1e5f});
  b.node("Mul", {"x", "gain"}, {"logits"}, "scale");
  b.node("Sigmoid", {"logits"}, {"p"}, "sigmoid");
  b.node("Tanh", {"logits"}, {"t"}, "tanh");
  b.output("p").output("t");
  Tensor x = normal({64}, 1, 0, 7);
  for (int64_t i = 0; i < 64; ++i) x.data<float>()[i] = (x.data<float>()[i] < 0 ? -1.f : 1.f) + x.data<float>()[i];
  const Audited a = audit_with_advice(b, {{{"x", x}}});
  expect_absorbed(a, "scale", "sigmoid");
  EXPECT_EQ(a.node("scale").tensors[0].targets.at("fp16").consequence.absorbed_by,
            (std::vector<std::string>{"sigmoid", "tanh"}));
  for (const auto& o : a.fp16().outputs) EXPECT_EQ(o.max_abs_err, 0) << o.name;
}

// transformers 4.x: (1 - mask) * lowest at run time. The constant is the root; the product is where
// 0 x -inf makes NaN, which reaches every output value.
TEST(Consequence, MaskProductOfZeroAndInfIsHarmWithItsRootNamed) {
  ModelBuilder b;
  attention_inputs(b);
  b.initializer("one", {}, {1.f});
  constant(b, "lowest", kLowest);
  b.node("Sub", {"one", "mask"}, {"inverted"}, "invert_mask");
  b.node("Mul", {"inverted", "lowest"}, {"bias"}, "mask_product");
  b.node("Add", {"scores", "bias"}, {"masked"}, "apply_mask");
  b.node("Softmax", {"masked"}, {"probs"}, "softmax");
  b.output("probs");
  const Audited a = audit_with_advice(b, {attention_sample()});
  EXPECT_EQ(a.fp16().unsafe_nodes, (std::vector<std::string>{"lowest", "mask_product"}));
  const report::NodeTarget& root = a.node("lowest").targets.at("fp16");
  EXPECT_EQ(root.harm_at, "mask_product");
  EXPECT_NE(root.consequence.find("NaN reaches output 'probs': 128 of 128 values"), std::string::npos)
      << root.consequence;
  const report::NodeTarget& harm = a.node("mask_product").targets.at("fp16");
  EXPECT_EQ(harm.roots, (std::vector<std::string>{"lowest"}));
  EXPECT_TRUE(a.has_reason("mask_product", "nonfinite", report::Verdict::Unsafe)) << a.reasons("mask_product");
  // The Add that carries the -inf on is not blamed: Softmax absorbs what it adds.
  EXPECT_EQ(verdict_of(a, "apply_mask"), report::Verdict::Warn) << a.reasons("apply_mask");
  expect_verified_advice(a, {"lowest", "mask_product"});
}

// An overflow whose Inf is a graph output.
TEST(Consequence, OverflowReachingAnOutputIsUnsafe) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("gain", {}, {1e3f});
  b.node("Mul", {"x", "gain"}, {"y"}, "scale");
  b.output("y");
  const Audited a = audit_with_advice(b, {{{"x", normal({64}, 100, 0, 9)}}});
  EXPECT_TRUE(a.has_reason("scale", "overflow", report::Verdict::Unsafe)) << a.reasons("scale");
  EXPECT_NE(a.reasons("scale").find("Inf reaches output 'y'"), std::string::npos) << a.reasons("scale");
  expect_verified_advice(a, {"scale"});
}

// Sums of squares beyond fp16 divide the values to zero: finite, and wrong at every output value.
TEST(Consequence, OverflowIntoADivisionIsHarmAndTheAdviceCoversTheBorder) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 64});
  b.int64_initializer("axes", {1}, {1});
  b.node("Mul", {"x", "x"}, {"sq"}, "square");
  b.node("ReduceSum", {"sq", "axes"}, {"sum"}, "sum");
  b.node("Div", {"x", "sum"}, {"y"}, "divide");
  b.output("y");
  const Audited a = audit_with_advice(b, {{{"x", normal({1, 64}, 300, 0, 4)}}});
  EXPECT_TRUE(a.has_reason("square", "overflow", report::Verdict::Unsafe)) << a.reasons("square");
  EXPECT_TRUE(a.has_reason("sum", "overflow", report::Verdict::Unsafe)) << a.reasons("sum");
  EXPECT_NE(a.reasons("sum").find("reaches output 'y' at"), std::string::npos) << a.reasons("sum");
  expect_verified_advice(a, {"square", "sum", "divide"});
}

// Scaled up past fp16 and back down: only the Mul that overflows is unsafe, but kept in fp32 its output
// still overflows where the fp16 consumer reads it converted, so the verified advice takes the consumer.
ModelBuilder up_and_down() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("gain", {}, {1e3f});
  b.initializer("inverse", {}, {1e-3f});
  b.node("Mul", {"x", "gain"}, {"h"}, "scale");
  b.node("Mul", {"h", "inverse"}, {"y"}, "shrink");
  b.output("y");
  return b;
}

TEST(Consequence, AdviceGrowsToTheConsumersOfAKeptNodeWhoseConversionHarms) {
  const TensorMap sample{{"x", normal({64}, 100, 0, 9)}};
  const Audited first = audit(up_and_down(), {sample});
  EXPECT_EQ(first.fp16().unsafe_nodes, (std::vector<std::string>{"scale"}));
  EXPECT_EQ(first.fp16().keep_fp32, (std::vector<std::string>{"scale"}));
  EXPECT_FALSE(first.fp16().advice.verified);
  AuditOptions keep_scale;
  keep_scale.keep_fp32 = {"scale"};
  const Audited kept = audit(up_and_down(), {sample}, keep_scale);
  EXPECT_NE(kept.reasons("scale").find("where 'shrink' reads it in fp16"), std::string::npos) << kept.reasons("scale");
  EXPECT_EQ(kept.fp16().keep_fp32, (std::vector<std::string>{"scale", "shrink"}));
  const Audited a = audit_with_advice(up_and_down(), {sample});
  expect_verified_advice(a, {"scale", "shrink"});
  EXPECT_EQ(a.fp16().advice.rounds, 2);
}

TEST(Consequence, AdviceNotVerifiedWithinTheRoundsSaysWhy) {
  const TensorMap sample{{"x", normal({64}, 100, 0, 9)}};
  Audited a = audit(up_and_down(), {sample});
  verify_advice(a.report, [&](const std::vector<std::string>& keep, const std::string&) {
    AuditOptions again;
    again.keep_fp32 = keep;
    return audit(up_and_down(), {sample}, again).report;
  }, 1);
  EXPECT_FALSE(a.fp16().advice.verified);
  EXPECT_EQ(a.fp16().advice.rounds, 1);
  EXPECT_EQ(a.fp16().advice.note,
            "no verified advice after 1 round: with 1 node kept in fp32, 1 stay unsafe ('scale'; first: 'scale': "
            "overflow: " + a.fp16().advice.note.substr(a.fp16().advice.note.find("overflow: ") + 10));
  EXPECT_NE(a.fp16().advice.note.find("where 'shrink' reads it in fp16"), std::string::npos) << a.fp16().advice.note;
}

// Activations scaled past fp16 into a LayerNormalization: Inf in, NaN out.
TEST(Consequence, OverflowIntoLayerNormMakesNaNThere) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4, 64});
  b.initializer("gain", {}, {1e3f});
  b.initializer("gamma", {64}, std::vector<float>(64, 1.f));
  b.initializer("beta", {64}, std::vector<float>(64, 0.f));
  b.node("Mul", {"x", "gain"}, {"h"}, "scale");
  b.node("LayerNormalization", {"h", "gamma", "beta"}, {"y"}, "layer_norm");
  b.output("y");
  const Audited a = audit_with_advice(b, {{{"x", normal({4, 64}, 100, 0, 6)}}});
  const report::NodeTarget& root = a.node("scale").targets.at("fp16");
  EXPECT_EQ(root.verdict, report::Verdict::Unsafe) << a.reasons("scale");
  EXPECT_EQ(root.harm_at, "layer_norm");
  EXPECT_NE(root.consequence.find("NaN reaches output 'y'"), std::string::npos) << root.consequence;
  expect_verified_advice(a, {"scale", "layer_norm"});
}

// A failing audit's advice is not verified until an audit with it applied passes: with limits that only
// an exact copy meets, the Identity reading an input beyond fp16 must be kept, and then is.
TEST(Consequence, AdviceIsVerifiedByAuditingAgain) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.node("Identity", {"x"}, {"y"}, "copy");
  b.output("y");
  AuditOptions options;
  options.thresholds.sqnr_unsafe_db["fp16"] = 399;  // nothing but an exact copy passes
  options.thresholds.sqnr_warn_db["fp16"] = 399;
  const Audited plain = audit(b, {{{"x", normal({64}, 1e5, 0, 8)}}}, options);
  ASSERT_FALSE(plain.fp16().pass);
  EXPECT_FALSE(plain.fp16().advice.verified);
  EXPECT_NE(plain.fp16().advice.note.find("not verified"), std::string::npos);
  const Audited a = audit_with_advice(b, {{{"x", normal({64}, 1e5, 0, 8)}}}, options);
  EXPECT_TRUE(a.fp16().advice.verified) << a.fp16().advice.note;
  EXPECT_EQ(a.fp16().keep_fp32, (std::vector<std::string>{"copy"}));
}
