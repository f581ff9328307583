// Golden audits: small models with a planted, known FP16 failure, each asserting the exact node and
// reason the audit names, and well-behaved models where nothing may be flagged unsafe.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/audit_helpers.h"

using namespace mpa;
using namespace mpa::test;


ModelBuilder decomposed_layer_norm() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4, 64});
  b.int64_initializer("axes", {1}, {-1});
  b.initializer("two", {}, {2.f});
  b.initializer("eps", {}, {1e-12f});
  b.node("ReduceMean", {"x", "axes"}, {"mean"}, "mean");
  b.node("Sub", {"x", "mean"}, {"d"}, "center");
  b.node("Pow", {"d", "two"}, {"sq"}, "square");
  b.node("ReduceMean", {"sq", "axes"}, {"var"}, "variance");
  b.node("Add", {"var", "eps"}, {"var_eps"}, "add_eps");
  b.node("Sqrt", {"var_eps"}, {"std"}, "std");
  b.node("Div", {"d", "std"}, {"y"}, "normalize");
  b.output("y");
  return b;
}

TensorMap layer_norm_input() { return {{"x", normal({4, 64}, 400, 0, 1)}}; }  // |x - mean| well above 256 in places

TEST(Golden, DecomposedLayerNormPowOverflowsAndEpsFlushesToZero) {
  const Audited a = audit(decomposed_layer_norm(), {layer_norm_input()});
  EXPECT_TRUE(a.has_reason("square", "overflow", report::Verdict::Unsafe)) << a.reasons("square");
  EXPECT_TRUE(a.has_reason("add_eps", "weight_underflow", report::Verdict::Unsafe)) << a.reasons("add_eps");
  EXPECT_EQ(a.fp16().first_unsafe, "square");
  EXPECT_FALSE(a.fp16().pass);
  // Sub and the mean itself are fine in fp16.
  EXPECT_EQ(a.node("center").targets.at("fp16").verdict, report::Verdict::Safe) << a.reasons("center");
}

// Inputs beyond fp16's range scaled down at once: kept in fp32, the Mul reads the graph input as given
// (fp32, as a mixed-precision deployment feeds it), so its output is finite and the model passes.
TEST(Golden, ANodeKeptInFp32ReadsGraphInputsInFp32) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("milli", {1}, {1e-3f});
  b.node("Mul", {"x", "milli"}, {"y"}, "shrink");
  b.output("y", onnx::TensorProto::FLOAT, {64});
  const TensorMap sample{{"x", normal({64}, 5e4f, 0, 3)}};
  const Audited plain = audit(b, {sample});
  EXPECT_GT(plain.node("shrink").tensors[0].targets.at("fp16").propagated.inf, 0);
  // The Inf comes from the input stored in fp16, not from the Mul: the reason names the input.
  ASSERT_EQ(plain.report.inputs.size(), 1u);
  EXPECT_GT(plain.report.inputs[0].targets.at("fp16").fit.overflow, 0);
  EXPECT_GT(plain.report.inputs[0].targets.at("fp16").stored.inf, 0);
  EXPECT_TRUE(plain.has_reason("shrink", "overflow", report::Verdict::Unsafe)) << plain.reasons("shrink");
  EXPECT_NE(plain.reasons("shrink").find("graph input 'x'"), std::string::npos) << plain.reasons("shrink");
  EXPECT_FALSE(plain.has_reason("shrink", "nonfinite", report::Verdict::Unsafe)) << plain.reasons("shrink");
  AuditOptions keep;
  keep.keep_fp32 = {"shrink"};
  const Audited kept = audit(b, {sample}, keep);
  const report::TensorTarget& y = kept.node("shrink").tensors[0].targets.at("fp16");
  EXPECT_EQ(y.propagated.nonfinite(), 0);
  EXPECT_EQ(y.propagated.max_abs, 0) << "an fp32 Mul of the fp32 input is the reference";
  EXPECT_TRUE(kept.fp16().pass);
}

// A Sub that cancels 1000 + small against 1000 loses precision on its own; the Split that feeds it has
// another output of fp16-subnormal values, whose poor storage must not excuse the Sub, which never reads it.
TEST(Golden, PrecisionLossIsMeasuredAgainstTheInputsANodeReads) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 64});
  b.initializer("thousand", {1}, {1000.f});
  b.node("Split", {"x"}, {"large", "tiny"}, "split");
  b.node("Sub", {"large", "thousand"}, {"centered"}, "center");
  b.output("centered", onnx::TensorProto::FLOAT, {1, 64});
  b.output("tiny", onnx::TensorProto::FLOAT, {1, 64});
  Tensor x = normal({2, 64}, 1.f, 1000.f, 4);
  const Tensor tiny = normal({64}, 4e-8f, 0, 5);
  for (int64_t i = 0; i < 64; ++i) x.data<float>()[64 + i] = tiny.data<float>()[i];
  const Audited a = audit(b, {{{"x", x}}});
  const auto& split_out = a.node("split").tensors;
  // The tiny half is stored worse than the Sub computes: measured against it, the Sub would lose nothing.
  const double center_sqnr = a.node("center").tensors[0].targets.at("fp16").isolated.sqnr_db();
  EXPECT_LT(split_out[1].targets.at("fp16").stored.sqnr_db(), center_sqnr - 3);
  EXPECT_GT(split_out[0].targets.at("fp16").stored.sqnr_db(), center_sqnr + 3);
  EXPECT_TRUE(a.has_reason("center", "precision_loss", report::Verdict::Unsafe)) << a.reasons("center");
}

// A model that computes in float64 (Cast to double, a double initializer): the target runs store every
// floating value in fp16, doubles included, so the Mul meets operands of one type in every stream, and its
// isolated run (fed the stored reference) equals the propagated one, which read the same stored values.
TEST(Golden, Float64ValuesAreStoredInTheFormatLikeFloat32Ones) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {16});
  onnx::TensorProto& gain = *b.graph().add_initializer();
  gain.set_name("gain");
  gain.set_data_type(onnx::TensorProto::DOUBLE);
  gain.add_dims(1);
  gain.add_double_data(1.0001);
  onnx::NodeProto& widen = b.node("Cast", {"x"}, {"xd"}, "widen");
  auto* to = widen.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::DOUBLE);
  b.node("Mul", {"xd", "gain"}, {"yd"}, "scale");
  b.output("yd", onnx::TensorProto::DOUBLE, {16});
  const Audited a = audit(b, {{{"x", normal({16}, 1.f, 0, 6)}}});
  const report::TensorStats& y = a.node("scale").tensors[0];
  EXPECT_EQ(y.dtype, "float64");
  const report::TensorTarget& t = y.targets.at("fp16");
  EXPECT_EQ(t.propagated.compared, 16);
  EXPECT_GT(t.propagated.max_abs, 0);
  EXPECT_EQ(t.isolated.max_abs, t.propagated.max_abs);
  // TF32 stores in FP32, and a target run stores float64 values as float32 there too (weights included).
  AuditOptions tf32;
  tf32.targets = {Format::TF32};
  const Audited in_tf32 = audit(b, {{{"x", normal({16}, 1.f, 0, 6)}}}, tf32);
  const report::TensorTarget& narrowed = in_tf32.node("scale").tensors[0].targets.at("tf32");
  EXPECT_EQ(narrowed.propagated.compared, 16);
  EXPECT_GT(narrowed.propagated.max_abs, 0) << "the tf32 run kept float64 values";
  EXPECT_EQ(narrowed.isolated.max_abs, narrowed.propagated.max_abs);
}

// An input of fp16-subnormal magnitudes through two exact ops (x 1): the first one reads the input as
// poorly as the second reads its output, so neither loses precision of its own; the input's storage is
// reported as its underflow.
TEST(Golden, AnExactOpFedASubnormalGraphInputLosesNothingOfItsOwn) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("one", {1}, {1.f});
  b.node("Mul", {"x", "one"}, {"y"}, "first");
  b.node("Mul", {"y", "one"}, {"z"}, "second");
  b.output("z", onnx::TensorProto::FLOAT, {64});
  const Audited a = audit(b, {{{"x", normal({64}, 3e-7f, 0, 8)}}});
  EXPECT_LT(a.report.inputs.at(0).targets.at("fp16").stored.sqnr_db(), 30);
  for (const char* node : {"first", "second"})
    EXPECT_FALSE(a.has_reason(node, "precision_loss", report::Verdict::Warn) ||
                 a.has_reason(node, "precision_loss", report::Verdict::Unsafe))
        << node << ": " << a.reasons(node);
  EXPECT_NE(a.reasons("first").find("graph input 'x'"), std::string::npos) << a.reasons("first");
}

// Keeping only the Pow in fp32 moves its overflow to the fp16 ReduceMean that reads it; keeping the whole
// variance path (up to the Sqrt, whose fp16 output fits again) makes the model pass.
TEST(Golden, KeepingNodesInFp32MovesOverflowsToTheBoundary) {
  AuditOptions only_pow;
  only_pow.keep_fp32 = {"square"};
  const Audited a = audit(decomposed_layer_norm(), {layer_norm_input()}, only_pow);
  EXPECT_TRUE(a.node("square").targets.at("fp16").kept_fp32);
  EXPECT_TRUE(a.has_reason("square", "overflow", report::Verdict::Unsafe)) << a.reasons("square");
  EXPECT_NE(a.reasons("square").find("where 'variance' reads it in fp16"), std::string::npos) << a.reasons("square");

  AuditOptions variance_path;
  variance_path.keep_fp32 = {"std", "square", "variance", "add_eps"};
  const Audited fixed = audit(decomposed_layer_norm(), {layer_norm_input()}, variance_path);
  EXPECT_EQ(fixed.report.config.keep_fp32, (std::vector<std::string>{"add_eps", "square", "std", "variance"}));
  for (const char* kept : {"square", "variance", "add_eps", "std"}) {
    EXPECT_TRUE(fixed.node(kept).targets.at("fp16").kept_fp32) << kept;
    EXPECT_EQ(fixed.node(kept).targets.at("fp16").verdict, report::Verdict::Safe) << fixed.reasons(kept);
    // Alone in "fp16" a kept node computes the reference exactly.
    EXPECT_EQ(fixed.node(kept).tensors[0].targets.at("fp16").isolated.max_abs, 0) << kept;
  }
  EXPECT_TRUE(fixed.fp16().pass) << fixed.fp16().unsafe_nodes.front();
  EXPECT_EQ(fixed.fp16().keep_fp32, (std::vector<std::string>{"square", "variance", "add_eps", "std"}));
  const report::OutputSummary& before = a.fp16().outputs.at(0);
  const report::OutputSummary& after = fixed.fp16().outputs.at(0);
  EXPECT_TRUE(std::isinf(before.max_rel_err) || before.max_rel_err > 1e-2) << before.max_rel_err;
  EXPECT_LT(after.max_rel_err, 1e-2);
}

ModelBuilder attention_mask_model() {
  ModelBuilder b(17);
  b.input("scores", onnx::TensorProto::FLOAT, {1, 2, 8, 8});
  b.input("mask", onnx::TensorProto::FLOAT, {1, 1, 1, 8});
  b.initializer("one", {}, {1.f});
  b.initializer("big_negative", {}, {-1e9f});
  b.node("Sub", {"one", "mask"}, {"inverted"}, "invert_mask");
  b.node("Mul", {"inverted", "big_negative"}, {"bias"}, "mask_bias");
  b.node("Add", {"scores", "bias"}, {"masked"}, "apply_mask");
  b.node("Softmax", {"masked"}, {"probs"}, "softmax");
  b.output("probs");
  return b;
}

TensorMap attention_mask_inputs() {
  return {{"scores", normal({1, 2, 8, 8}, 1, 0, 2)},
          {"mask", Tensor::from_vector<float>({1, 1, 1, 1, 1, 0, 0, 0}, {1, 1, 1, 8})}};
}

TEST(Golden, AttentionMaskFromMinusOneBillionGivesNaN) {
  const Audited a = audit(attention_mask_model(), {attention_mask_inputs()});
  // -1e9 becomes -inf in fp16, and the kept positions compute 0 x -inf = NaN.
  EXPECT_TRUE(a.has_reason("mask_bias", "weight_overflow", report::Verdict::Unsafe)) << a.reasons("mask_bias");
  EXPECT_TRUE(a.has_reason("mask_bias", "nonfinite", report::Verdict::Unsafe)) << a.reasons("mask_bias");
  EXPECT_TRUE(a.has_reason("mask_bias", "overflow", report::Verdict::Unsafe)) << a.reasons("mask_bias");
  EXPECT_EQ(a.fp16().first_unsafe, "mask_bias");
  EXPECT_EQ(a.fp16().first_error_jump, "mask_bias");
  EXPECT_GT(a.node("softmax").tensors[0].targets.at("fp16").propagated.nan, 0);
}

// A node kept in fp32 reads its weights in fp32 too: -1e9 stays finite, 0 x -1e9 is 0, and the masked
// positions reach the fp16 Add as -inf (the boundary the verdict names), which Softmax turns into zeros.
TEST(Golden, AKeptNodeReadsItsWeightsInFp32) {
  AuditOptions keep_bias;
  keep_bias.keep_fp32 = {"mask_bias"};
  const Audited a = audit(attention_mask_model(), {attention_mask_inputs()}, keep_bias);
  EXPECT_EQ(a.node("mask_bias").tensors[0].targets.at("fp16").propagated.nan, 0);
  EXPECT_EQ(a.node("mask_bias").tensors[0].targets.at("fp16").propagated.inf, 0);
  EXPECT_EQ(a.node("softmax").tensors[0].targets.at("fp16").propagated.nan, 0);
  EXPECT_FALSE(a.has_reason("mask_bias", "weight_overflow", report::Verdict::Unsafe)) << a.reasons("mask_bias");
  EXPECT_NE(a.reasons("mask_bias").find("where 'apply_mask' reads it in fp16"), std::string::npos)
      << a.reasons("mask_bias");
  EXPECT_LT(a.fp16().outputs.at(0).max_abs_err, 1e-2);
}

TEST(Golden, ExpWithoutMaxSubtractionOverflows) {
  ModelBuilder b;
  b.input("logits", onnx::TensorProto::FLOAT, {4, 32});
  b.int64_initializer("axes", {1}, {1});
  b.node("Exp", {"logits"}, {"e"}, "exp");
  b.node("ReduceSum", {"e", "axes"}, {"total"}, "sum");
  b.node("Div", {"e", "total"}, {"p"}, "divide");
  b.output("p");
  const Audited a = audit(b, {{{"logits", normal({4, 32}, 2, 10, 3)}}});  // logits around 10: exp(x) > 65504 for x > 11.09
  EXPECT_TRUE(a.has_reason("exp", "overflow", report::Verdict::Unsafe)) << a.reasons("exp");
  EXPECT_EQ(a.fp16().first_unsafe, "exp");
  EXPECT_EQ(a.fp16().culprits.front(), "exp");
}

TEST(Golden, MatMulWithFp16InputsWhoseSumsExceedTheRange) {
  ModelBuilder b;
  b.input("a", onnx::TensorProto::FLOAT, {8, 256});
  b.initializer("w", {256, 8}, std::vector<float>(256 * 8, 20.f));
  b.node("MatMul", {"a", "w"}, {"y"}, "matmul");
  b.output("y");
  Tensor a_in = normal({8, 256}, 1, 20, 4);  // |a| ~ 20, |a*w| ~ 400: inputs fit, 256-term sums ~1e5 do not
  const Audited a = audit(b, {{{"a", a_in}}});
  EXPECT_TRUE(a.has_reason("matmul", "overflow", report::Verdict::Unsafe)) << a.reasons("matmul");
  EXPECT_FALSE(a.has_reason("matmul", "weight_overflow", report::Verdict::Unsafe));
  EXPECT_EQ(a.node("matmul").tensors[0].targets.at("fp16").fit.overflow, 64);
  EXPECT_GT(a.node("matmul").tensors[0].range.absmax(), 65504);
}

TEST(Golden, ChainThroughTheSubnormalRangeLosesPrecision) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1024});
  b.initializer("down", {}, {1e-3f});
  b.initializer("up", {}, {1e3f});
  b.node("Mul", {"x", "down"}, {"small"}, "scale_down1");
  b.node("Mul", {"small", "down"}, {"tiny"}, "scale_down2");
  b.node("Mul", {"tiny", "up"}, {"back"}, "scale_up1");
  b.node("Mul", {"back", "up"}, {"y"}, "scale_up2");
  b.output("y");
  const Audited a = audit(b, {{{"x", normal({1024}, 1, 0, 5)}}});
  // x * 1e-6 lands below fp16's smallest normal (6.1e-5): few bits survive, and some values flush.
  EXPECT_TRUE(a.has_reason("scale_down2", "precision_loss", report::Verdict::Warn)) << a.reasons("scale_down2");
  EXPECT_TRUE(a.has_reason("scale_down2", "underflow", report::Verdict::Warn)) << a.reasons("scale_down2");
  EXPECT_GT(a.node("scale_down2").tensors[0].targets.at("fp16").fit.subnormal, 900);
  EXPECT_EQ(a.node("scale_down1").targets.at("fp16").verdict, report::Verdict::Safe) << a.reasons("scale_down1");
  EXPECT_EQ(a.fp16().first_error_jump, "scale_down2");
  EXPECT_EQ(a.fp16().culprits.front(), "scale_down2");
  // Scaling back up cannot restore the lost bits: the output carries the loss.
  EXPECT_LT(a.fp16().outputs.at(0).sqnr_db, 40);
}

TEST(Golden, WellBehavedMlpIsSafe) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {16, 64});
  b.initializer("w1", {64, 128}, values(64 * 128, 0.125f, 6));
  b.initializer("b1", {128}, values(128, 0.1f, 7));
  b.initializer("w2", {128, 10}, values(128 * 10, 0.09f, 8));
  b.initializer("b2", {10}, values(10, 0.1f, 9));
  b.node("Gemm", {"x", "w1", "b1"}, {"h"}, "fc1");
  b.node("Relu", {"h"}, {"a"}, "relu");
  b.node("Gemm", {"a", "w2", "b2"}, {"logits"}, "fc2");
  b.node("Softmax", {"logits"}, {"p"}, "softmax");
  b.output("p");
  std::vector<TensorMap> samples;
  for (uint32_t s = 0; s < 4; ++s) samples.push_back({{"x", normal({16, 64}, 1, 0, 10 + s)}});
  const Audited a = audit(b, samples);
  EXPECT_TRUE(a.fp16().pass);
  EXPECT_TRUE(a.fp16().unsafe_nodes.empty());
  for (const auto& n : a.report.nodes) EXPECT_EQ(n.targets.at("fp16").verdict, report::Verdict::Safe) << a.reasons(n.name);
  EXPECT_GT(a.fp16().outputs.at(0).sqnr_db, 50);
}

TEST(Golden, DeepResidualStackIsSafe) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {8, 64});
  b.initializer("gamma", {64}, std::vector<float>(64, 1.f));
  b.initializer("beta", {64}, std::vector<float>(64, 0.f));
  std::string x = "x";
  for (int i = 0; i < 24; ++i) {
    const std::string s = std::to_string(i);
    b.initializer("w" + s, {64, 64}, values(64 * 64, 0.125f, 100 + static_cast<uint32_t>(i)));
    b.node("LayerNormalization", {x, "gamma", "beta"}, {"n" + s}, "norm" + s);
    b.node("MatMul", {"n" + s, "w" + s}, {"m" + s}, "proj" + s);
    b.node("Relu", {"m" + s}, {"r" + s}, "act" + s);
    b.node("Add", {x, "r" + s}, {"x" + s}, "residual" + s);
    x = "x" + s;
  }
  b.output(x);
  const Audited a = audit(b, {{{"x", normal({8, 64}, 1, 0, 11)}}, {{"x", normal({8, 64}, 1, 0, 12)}}});
  EXPECT_TRUE(a.fp16().pass) << (a.fp16().unsafe_nodes.empty() ? "" : a.reasons(a.fp16().unsafe_nodes.front()));
  EXPECT_GT(a.fp16().outputs.at(0).sqnr_db, 40);
}

TEST(Golden, Fp8AbsmaxScalingFitsTensorsThatOverflowUnscaled) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {256});
  b.initializer("gain", {}, {1000.f});
  b.node("Mul", {"x", "gain"}, {"y"}, "amplify");
  b.node("Relu", {"y"}, {"z"}, "relu");
  b.output("z");
  AuditOptions unscaled;
  unscaled.targets = {Format::FP8E4M3FN};
  AuditOptions scaled = unscaled;
  scaled.fp8_absmax_scaling = true;
  const std::vector<TensorMap> samples = {{{"x", normal({256}, 1, 0, 21)}}};
  const Audited plain = audit(b, samples, unscaled), calibrated = audit(b, samples, scaled);
  // Unscaled, |x| * 1000 exceeds e4m3's 448 (and the 1000 weight itself does); scaled, every tensor fits.
  EXPECT_TRUE(plain.has_reason("amplify", "overflow", report::Verdict::Unsafe, "fp8e4m3")) << plain.reasons("amplify", "fp8e4m3");
  EXPECT_TRUE(plain.has_reason("amplify", "weight_overflow", report::Verdict::Unsafe, "fp8e4m3"));
  EXPECT_EQ(calibrated.node("amplify").targets.at("fp8e4m3").verdict, report::Verdict::Safe)
      << calibrated.reasons("amplify", "fp8e4m3");
  EXPECT_EQ(calibrated.node("amplify").tensors[0].targets.at("fp8e4m3").fit.overflow, 0);
  // E4M3 keeps 3 mantissa bits: about 6 * 4 + 1.8 dB of SQNR for a stored tensor.
  const double sqnr = calibrated.report.summary.at("fp8e4m3").outputs.at(0).sqnr_db;
  EXPECT_GT(sqnr, 20);
  EXPECT_LT(sqnr, 40);
}

// A recurrent model audits against an fp64 reference too (LSTM computes in double there): the fp16 run's
// error measured against the exact result is close to that against the fp32 reference.
TEST(Golden, LstmAuditsAgainstAnFp64Reference) {
  const int64_t steps = 6, batch = 2, input = 4, hidden = 8;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {steps, batch, input});
  b.initializer("w", {1, 4 * hidden, input}, values(size_t(4 * hidden * input), 0.5f, 21));
  b.initializer("r", {1, 4 * hidden, hidden}, values(size_t(4 * hidden * hidden), 0.5f, 22));
  b.initializer("b", {1, 8 * hidden}, values(size_t(8 * hidden), 0.1f, 23));
  auto& lstm = b.node("LSTM", {"x", "w", "r", "b"}, {"y", "y_h"}, "lstm");
  onnx::AttributeProto* size = lstm.add_attribute();
  size->set_name("hidden_size");
  size->set_type(onnx::AttributeProto::INT);
  size->set_i(hidden);
  b.output("y");
  b.output("y_h");
  const std::vector<TensorMap> samples = {{{"x", normal({steps, batch, input}, 1.f, 0.f, 24)}}};
  AuditOptions in_double;
  in_double.reference = Format::FP64;
  const Audited exact = audit(b, samples, in_double), fp32 = audit(b, samples);
  const probes::Divergence &vs_exact = exact.node("lstm").tensors.at(0).targets.at("fp16").propagated,
                           &vs_fp32 = fp32.node("lstm").tensors.at(0).targets.at("fp16").propagated;
  EXPECT_EQ(vs_exact.compared, steps * batch * hidden);
  EXPECT_GT(vs_exact.sqnr_db(), 40);
  EXPECT_NEAR(vs_exact.sqnr_db(), vs_fp32.sqnr_db(), 1.0);
  EXPECT_EQ(exact.node("lstm").tensors.at(0).dtype, "float32");  // reported as the model's type
}
