// The --profile ort-cuda rules (docs/numerics.md, "Op math per class"): for each, an input on which the
// ONNX Runtime CUDA EP and the generic (float op math, one rounding) profile differ in the predicted way.
#include <cmath>

#include "numerics/one_node.h"

using namespace mpa;
using namespace mpa::test;

namespace {

const SessionOptions kGeneric = fp16_options(RuntimeProfile::Generic);
const SessionOptions kOrtCuda = fp16_options(RuntimeProfile::OrtCuda);

float first(const Tensor& t) { return t.data<float>()[0]; }

}  // namespace

// ReduceMean fast path: the float sum 4096 * 30 = 122880 is written to fp16 (Inf) before the division.
TEST(OrtCudaRules, ReduceMeanStoresTheSumInFp16BeforeDividing) {
  OneNode mean("ReduceMean", {"x"}, 17);
  mean.attribute("axes", std::vector<int64_t>{-1}).attribute("keepdims", int64_t{0});
  const std::vector<Tensor> feeds{float_tensor(std::vector<float>(4096, 30.f), {1, 4096})};
  EXPECT_EQ(first(mean.run(feeds, kGeneric)), 30.f);
  EXPECT_EQ(first(mean.run(feeds, kOrtCuda)), INFINITY);
  // Rounding the sum first also moves finite results: 1025 + 1026 + 1026 = 3077 is stored as 3076 (fp16 step 2
  // there), 3076 / 3 = 1025.33 -> 1025, where the generic mean is 1025.67 -> 1026.
  const std::vector<Tensor> finite{float_tensor({1025.f, 1026.f, 1026.f}, {1, 3})};
  EXPECT_EQ(first(mean.run(finite, kGeneric)), 1026.f);
  EXPECT_EQ(first(mean.run(finite, kOrtCuda)), 1025.f);
}

// Reducing a middle axis is not ORT's fast path (cuDNN reduces it in float): no overflow.
TEST(OrtCudaRules, ReduceMeanOverAMiddleAxisKeepsTheFloatSum) {
  OneNode mean("ReduceMean", {"x"}, 17);
  mean.attribute("axes", std::vector<int64_t>{1}).attribute("keepdims", int64_t{0});
  const std::vector<Tensor> feeds{float_tensor(std::vector<float>(2 * 4096 * 2, 30.f), {2, 4096, 2})};
  const Tensor y = mean.run(feeds, kOrtCuda);
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], 30.f);
}

// Conv: conv = 1 + 2^-11 (a tie, RN16 -> 1), bias 2^-11. Generic: RN16(1 + 2^-10) = 1 + 2^-10.
// ort-cuda: RN16(RN16(1 + 2^-11) + 2^-11) = RN16(1 + 2^-11) = 1.
TEST(OrtCudaRules, ConvAddsTheBiasAfterRounding) {
  const OneNode conv("Conv", {"x", "w", "b"});
  const float e = std::ldexp(1.f, -11);
  const std::vector<Tensor> feeds{float_tensor({1.f, 1.f}, {1, 2, 1, 1}), float_tensor({1.f, e}, {1, 2, 1, 1}),
                                  float_tensor({e}, {1})};
  EXPECT_EQ(first(conv.run(feeds, kGeneric)), 1.f + 2 * e);
  EXPECT_EQ(first(conv.run(feeds, kOrtCuda)), 1.f);
  // Same on the depthwise path (one input channel per group): (1 + 2e)(1 - e) = 1 + e - 2e^2 rounds to 1,
  // so ort-cuda gives RN16(1 + e) = 1 (a tie to even), generic RN16(1 + 2e - 2e^2) = 1 + 2e.
  OneNode depthwise("Conv", {"x", "w", "b"});
  depthwise.attribute("group", int64_t{2});
  const std::vector<Tensor> dw{float_tensor({1.f + 2 * e, 1.f}, {1, 2, 1, 1}),
                               float_tensor({1.f - e, 1.f}, {2, 1, 1, 1}), float_tensor({e, e}, {2})};
  EXPECT_EQ(depthwise.run(dw, kGeneric).data<float>()[0], 1.f + 2 * e);
  EXPECT_EQ(depthwise.run(dw, kOrtCuda).data<float>()[0], 1.f);
}

// Gemm: alpha = beta = 1.0004 are 1 in fp16. AB = 1000, C = 1000: generic RN16(2000.8) = 2001, ort-cuda 2000.
TEST(OrtCudaRules, GemmRoundsAlphaAndBetaToFp16) {
  OneNode gemm("Gemm", {"a", "b", "c"}, 13);
  gemm.attribute("alpha", 1.0004f).attribute("beta", 1.0004f);
  const std::vector<Tensor> feeds{float_tensor({1000.f}, {1, 1}), float_tensor({1.f}, {1, 1}),
                                  float_tensor({1000.f}, {1, 1})};
  EXPECT_EQ(first(gemm.run(feeds, kGeneric)), 2001.f);
  EXPECT_EQ(first(gemm.run(feeds, kOrtCuda)), 2000.f);
}

// Gelu(tanh) in half arithmetic: at x = -3.5859375 tanh(...) = -0.99956 rounds to -1 in fp16, so
// cdf = 0.5 + 0.5 * -1 = 0 and y = -0; float op math gives -0.000437.
TEST(OrtCudaRules, TanhGeluRunsInHalfArithmetic) {
  OneNode gelu("Gelu", {"x"});
  gelu.attribute("approximate", std::string("tanh"));
  const std::vector<Tensor> feeds{float_tensor({-3.5859375f}, {1})};
  EXPECT_NEAR(first(gelu.run(feeds, kGeneric)), -0.000437f, 1e-6f);
  const float ort = first(gelu.run(feeds, kOrtCuda));
  EXPECT_EQ(ort, 0.f);
  EXPECT_TRUE(std::signbit(ort));
}

// The exact Gelu is float math in ORT too (OP_Gelu<half> computes in float): no rule, same bits.
TEST(OrtCudaRules, ExactGeluIsUnchanged) {
  const OneNode gelu("Gelu", {"x"});
  std::vector<float> x;
  for (float v = -6.f; v <= 6.f; v += 0.01f) x.push_back(v);
  const std::vector<Tensor> feeds{float_tensor(x, {int64_t(x.size())})};
  const Tensor generic = gelu.run(feeds, kGeneric), ort = gelu.run(feeds, kOrtCuda);
  EXPECT_EQ(std::memcmp(generic.data<float>(), ort.data<float>(), x.size() * sizeof(float)), 0);
}

// com.microsoft Gelu runs ORT's half _Gelu: at x = -3.671875 erf(x * sqrt(1/2)) = -0.99976 rounds to -1 in
// fp16, so 1 + erf = 0 and y = -0; float op math gives -0.000442.
TEST(OrtCudaRules, ContribGeluRunsInHalfArithmetic) {
  OneNode gelu("Gelu", {"x"});
  gelu.domain("com.microsoft");
  const std::vector<Tensor> feeds{float_tensor({-3.671875f}, {1})};
  EXPECT_NEAR(first(gelu.run(feeds, kGeneric)), -0.000442f, 1e-6f);
  const float ort = first(gelu.run(feeds, kOrtCuda));
  EXPECT_EQ(ort, 0.f);
  EXPECT_TRUE(std::signbit(ort));
}

// Under storage FP32 the profile changes nothing (the rules are fp16 rules).
TEST(OrtCudaRules, NoRuleAppliesAtFp32) {
  SessionOptions fp32;
  fp32.profile = RuntimeProfile::OrtCuda;
  OneNode mean("ReduceMean", {"x"}, 17);
  mean.attribute("axes", std::vector<int64_t>{-1});
  EXPECT_EQ(first(mean.run({float_tensor(std::vector<float>(4096, 30.f), {1, 4096})}, fp32)), 30.f);
}
