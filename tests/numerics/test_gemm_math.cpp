// GEMM arithmetic under the emulated formats (src/backends/cpu/gemm.h, GemmMath): fp32 accumulation of
// fp16 operands, the pessimistic fp16-accumulation model, TF32 operands. Each runs the real op through a
// Session, as an audit does.
#include <cmath>
#include <cstdio>
#include <random>

#include "backends/cpu/gemm.h"
#include "numerics/one_node.h"

using namespace mpa;
using namespace mpa::test;

namespace {

std::vector<float> uniform(size_t count, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> rounded(std::vector<float> v, Format format) {
  round_to_format(format, v.data(), static_cast<int64_t>(v.size()));
  return v;
}

// The largest |got - exact| / |exact| over a matrix, exact computed in double from the same operands.
double max_relative_error(const Tensor& got, const std::vector<float>& a, const std::vector<float>& b, int64_t M,
                          int64_t N, int64_t K) {
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double exact = 0;
      for (int64_t k = 0; k < K; ++k) exact += double(a[size_t(m * K + k)]) * double(b[size_t(k * N + n)]);
      worst = std::max(worst, std::abs(double(got.data<float>()[m * N + n]) - exact) / std::abs(exact));
    }
  return worst;
}

}  // namespace

// fp32 accumulation (CUBLAS_COMPUTE_32F) of fp16 operands: sgemm on the fp16-rounded operands, then one
// rounding of the output, bit for bit.
TEST(GemmMath, Fp32AccumulationOfFp16OperandsIsSgemmThenOneRounding) {
  const int64_t M = 37, N = 53, K = 300;
  const std::vector<float> a = uniform(size_t(M * K), -3, 3, 1), b = uniform(size_t(K * N), -3, 3, 2);
  const Tensor got = OneNode("MatMul", {"a", "b"}).run({float_tensor(a, {M, K}), float_tensor(b, {K, N})}, fp16_options());

  const std::vector<float> a16 = rounded(a, Format::FP16), b16 = rounded(b, Format::FP16);
  std::vector<float> expected(size_t(M * N));
  cpu::gemm(false, false, M, N, K, 1.f, a16.data(), K, b16.data(), N, 0.f, expected.data(), N);
  expected = rounded(expected, Format::FP16);
  ASSERT_EQ(got.numel(), M * N);
  EXPECT_EQ(std::memcmp(got.data<float>(), expected.data(), expected.size() * sizeof(float)), 0);
}

// CUBLAS_COMPUTE_16F on a long reduction: the running sum (~1000) has an fp16 step of 0.5-1, so rounding it
// every 16 products loses digits that fp32 accumulation keeps. Numbers printed for docs/numerics.md.
TEST(GemmMath, Fp16AccumulationIsVisiblyWorseOnLongK) {
  const int64_t M = 8, N = 8, K = 4096;
  const std::vector<float> a = rounded(uniform(size_t(M * K), 0, 1, 3), Format::FP16);
  const std::vector<float> b = rounded(uniform(size_t(K * N), 0, 1, 4), Format::FP16);
  const OneNode matmul("MatMul", {"a", "b"});
  const std::vector<Tensor> feeds{float_tensor(a, {M, K}), float_tensor(b, {K, N})};
  const double fp32_acc = max_relative_error(matmul.run(feeds, fp16_options()), a, b, M, N, K);
  const double fp16_acc = max_relative_error(
      matmul.run(feeds, fp16_options(RuntimeProfile::Generic, Accumulation::FP16)), a, b, M, N, K);
  std::printf("K=%lld, U(0,1) operands in fp16, max relative error vs fp64: fp32 accumulation %.3g, "
              "fp16 accumulation %.3g\n", static_cast<long long>(K), fp32_acc, fp16_acc);
  EXPECT_LE(fp32_acc, std::ldexp(1.0, -11) * 1.01);  // one rounding of the output, plus fp32 summation noise
  EXPECT_GT(fp16_acc, 4 * fp32_acc);
  EXPECT_GT(fp16_acc, 2e-3);
}

// fp16 accumulation with BF16 storage rounds onto the bf16 grid: worse again (8 fraction bits).
TEST(GemmMath, Bf16AccumulationRoundsOntoTheBf16Grid) {
  const int64_t M = 4, N = 4, K = 1024;
  const std::vector<float> a = rounded(uniform(size_t(M * K), 0, 1, 5), Format::BF16);
  const std::vector<float> b = rounded(uniform(size_t(K * N), 0, 1, 6), Format::BF16);
  SessionOptions bf16 = fp16_options(RuntimeProfile::Generic, Accumulation::FP16);
  bf16.precision = Format::BF16;
  const Tensor got = OneNode("MatMul", {"a", "b"}).run({float_tensor(a, {M, K}), float_tensor(b, {K, N})}, bf16);
  EXPECT_GT(max_relative_error(got, a, b, M, N, K), std::ldexp(1.0, -8));
}

// TF32 (precision tf32): operands rounded to 10 fraction bits before an fp32 GEMM. 1 + 2^-12 is 1 in TF32.
TEST(GemmMath, Tf32RoundsMatMulOperands) {
  SessionOptions tf32;
  tf32.precision = Format::TF32;
  const OneNode matmul("MatMul", {"a", "b"});
  const float x = 1.f + std::ldexp(1.f, -12);
  EXPECT_EQ(matmul.run({float_tensor({x}, {1, 1}), float_tensor({x}, {1, 1})}, tf32).data<float>()[0], 1.f);
  EXPECT_EQ(matmul.run({float_tensor({x}, {1, 1}), float_tensor({x}, {1, 1})}, {}).data<float>()[0], x * x);

  // A general case: equal to fp32 on pre-rounded operands, different from fp32 on the originals.
  const int64_t M = 16, N = 24, K = 40;
  const std::vector<float> a = uniform(size_t(M * K), -1, 1, 7), b = uniform(size_t(K * N), -1, 1, 8);
  const Tensor got = matmul.run({float_tensor(a, {M, K}), float_tensor(b, {K, N})}, tf32);
  const Tensor on_rounded = matmul.run(
      {float_tensor(rounded(a, Format::TF32), {M, K}), float_tensor(rounded(b, Format::TF32), {K, N})}, {});
  const Tensor fp32 = matmul.run({float_tensor(a, {M, K}), float_tensor(b, {K, N})}, {});
  EXPECT_EQ(std::memcmp(got.data<float>(), on_rounded.data<float>(), size_t(M * N) * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(got.data<float>(), fp32.data<float>(), size_t(M * N) * sizeof(float)), 0);
}

// Conv under TF32 rounds the im2col operand and the weights: same as fp32 on pre-rounded X and W.
TEST(GemmMath, Tf32RoundsConvOperands) {
  SessionOptions tf32;
  tf32.precision = Format::TF32;
  OneNode conv("Conv", {"x", "w"});
  conv.attribute("pads", std::vector<int64_t>{1, 1, 1, 1});
  const std::vector<float> x = uniform(3 * 9 * 9, -1, 1, 9), w = uniform(4 * 3 * 3 * 3, -1, 1, 10);
  const Tensor got = conv.run({float_tensor(x, {1, 3, 9, 9}), float_tensor(w, {4, 3, 3, 3})}, tf32);
  const Tensor on_rounded = conv.run({float_tensor(rounded(x, Format::TF32), {1, 3, 9, 9}),
                                      float_tensor(rounded(w, Format::TF32), {4, 3, 3, 3})}, {});
  const Tensor fp32 = conv.run({float_tensor(x, {1, 3, 9, 9}), float_tensor(w, {4, 3, 3, 3})}, {});
  const size_t bytes = size_t(got.numel()) * sizeof(float);
  EXPECT_EQ(std::memcmp(got.data<float>(), on_rounded.data<float>(), bytes), 0);
  EXPECT_NE(std::memcmp(got.data<float>(), fp32.data<float>(), bytes), 0);
}

// Transposed operands and beta * C go through the same seam: Gemm(transA, transB) with fp16 accumulation
// equals a direct chunked model computed here.
TEST(GemmMath, Fp16AccumulationModelOnTransposedGemm) {
  const int64_t M = 5, N = 7, K = 70;
  const std::vector<float> at = rounded(uniform(size_t(K * M), -2, 2, 11), Format::FP16);  // A^T: K x M
  const std::vector<float> bt = rounded(uniform(size_t(N * K), -2, 2, 12), Format::FP16);  // B^T: N x K
  const std::vector<float> c = rounded(uniform(size_t(N), -2, 2, 13), Format::FP16);
  OneNode gemm("Gemm", {"a", "b", "c"});
  gemm.attribute("transA", int64_t{1}).attribute("transB", int64_t{1});
  const Tensor got = gemm.run({float_tensor(at, {K, M}), float_tensor(bt, {N, K}), float_tensor(c, {N})},
                              fp16_options(RuntimeProfile::Generic, Accumulation::FP16));
  auto rn16 = [](float v) { return round_to_format(Format::FP16, v); };
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float running = 0;
      for (int64_t k0 = 0; k0 < K; k0 += cpu::kHalfAccumulationChunk) {
        double partial = 0;  // 16 products of fp16 values: exact in double, and fp32 rounds it once
        for (int64_t k = k0; k < std::min(K, k0 + cpu::kHalfAccumulationChunk); ++k)
          partial += double(at[size_t(k * M + m)]) * double(bt[size_t(n * K + k)]);
        running = rn16(running + rn16(static_cast<float>(partial)));
      }
      const float expected = rn16(running + c[size_t(n)]);
      EXPECT_NEAR(got.data<float>()[m * N + n], expected, std::abs(expected) * 1e-3 + 1e-3) << m << "," << n;
    }
}

// Where the emulation is approximate (docs/numerics.md): cuBLAS sums K in an order of its own (tile order,
// split-K, tensor-core internals), sgemm in another. Two fp32 orders - OpenBLAS's and a sequential loop
// split 4 ways as split-K would - differ by a few fp32 ulps, which moves the fp16 output only where the
// fp32 result lies next to an fp16 rounding boundary, and then by one fp16 ulp - unless the sum cancels
// (|result| far below sum |a_k b_k|), where the same fp32 difference spans several fp16 ulps of the small
// result. Which elements those are depends on the BLAS kernel the CPU selects. Numbers printed for the doc.
TEST(GemmMath, SummationOrderMovesTheFp16OutputByOneUlpUnlessTheSumCancels) {
  const int64_t M = 64, N = 64, K = 4096, splits = 4;
  const std::vector<float> a = rounded(uniform(size_t(M * K), -1, 1, 14), Format::FP16);
  const std::vector<float> b = rounded(uniform(size_t(K * N), -1, 1, 15), Format::FP16);
  std::vector<float> blas(size_t(M * N));
  cpu::gemm(false, false, M, N, K, 1.f, a.data(), K, b.data(), N, 0.f, blas.data(), N);
  // |diff| relative to sum |a_k b_k| (what summation error bounds scale with) and to |result| (which
  // cancellation can make arbitrarily small).
  double worst_vs_magnitude = 0, worst_vs_result = 0;
  int64_t fp16_differs = 0, worst_ulps = 0, worst_ulps_without_cancellation = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float split_sum = 0;
      double magnitude = 0;
      for (int64_t s = 0; s < splits; ++s) {
        float partial = 0;
        for (int64_t k = s * K / splits; k < (s + 1) * K / splits; ++k) {
          partial += a[size_t(m * K + k)] * b[size_t(k * N + n)];
          magnitude += std::abs(double(a[size_t(m * K + k)]) * b[size_t(k * N + n)]);
        }
        split_sum += partial;
      }
      const float ref = blas[size_t(m * N + n)];
      const double diff = std::abs(double(split_sum) - ref);
      worst_vs_magnitude = std::max(worst_vs_magnitude, diff / magnitude);
      worst_vs_result = std::max(worst_vs_result, diff / std::abs(double(ref)));
      const int ulps = std::abs(int(float_to_half(split_sum)) - int(float_to_half(ref)));
      fp16_differs += ulps != 0;
      worst_ulps = std::max<int64_t>(worst_ulps, ulps);
      if (std::abs(double(ref)) * 16 >= magnitude)
        worst_ulps_without_cancellation = std::max<int64_t>(worst_ulps_without_cancellation, ulps);
    }
  std::printf("K=%lld, U(-1,1) fp16 operands, sgemm vs 4-way split sequential fp32 sums: max |diff| = %.3g of "
              "sum|a*b|, %.3g of |result|; fp16 outputs differ in %lld of %lld elements, by at most %lld ulp (%lld where "
              "|result| >= sum|a*b|/16)\n",
              static_cast<long long>(K), worst_vs_magnitude, worst_vs_result, static_cast<long long>(fp16_differs),
              static_cast<long long>(M * N), static_cast<long long>(worst_ulps),
              static_cast<long long>(worst_ulps_without_cancellation));
  EXPECT_LT(worst_vs_magnitude, 1e-5);
  EXPECT_LE(worst_ulps_without_cancellation, 1);
  EXPECT_LT(fp16_differs, M * N / 10);
}
