// mpaudit's CPU emulation held against an NVIDIA GPU: every float converted to fp16/bf16/fp8, every pair
// of fp16 values added, multiplied and divided, every fp16 input through each shared unary functor, and
// cuBLAS GEMMs under each accumulation mode. Skipped where no CUDA device is present (CI); run on a GPU
// machine with `ctest -L cuda` or the binary itself. docs/numerics.md records what it found.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <random>

#include "backends/cpu/elementwise.h"
#include "cuda/gpu_reference.h"
#include "kernels/unary.h"
#include "numerics/one_node.h"

using namespace mpa;
using namespace mpa::test;

namespace {

class CudaNumerics : public ::testing::Test {
 protected:
  void SetUp() override {
    static const std::string device = gpu::device_description();
    if (device.empty()) GTEST_SKIP() << "no CUDA device";
    static bool printed = false;
    if (!printed) std::printf("device: %s\n", device.c_str());
    printed = true;
  }
};

bool is_nan(float x) { return std::isnan(x); }

// Distance in units in the last place between two finite fp16 values (codes ordered as integers).
int half_ulp_distance(float x, float y) {
  auto ordered = [](float v) {
    const uint16_t code = float_to_half(v);
    return (code & 0x8000) ? -int(code & 0x7FFF) : int(code);
  };
  return std::abs(ordered(x) - ordered(y));
}

struct Tally {
  std::atomic<uint64_t> mismatches{0}, nan_encoding_differs{0};
  std::atomic<uint32_t> first_mismatch_input{0};
  void record(uint32_t input, bool nan_pair, bool bits_equal) {
    if (bits_equal) return;
    if (nan_pair) {
      ++nan_encoding_differs;
      return;
    }
    uint32_t expected = 0;
    if (mismatches++ == 0) first_mismatch_input.compare_exchange_strong(expected, input);
  }
};

}  // namespace

// Every one of the 2^32 floats, stored in the format and loaded back: the device's own conversion
// instructions against the CPU's bulk path (what the audit runs) and against the shared scalar source
// compiled for the device (what the CUDA backend runs). NaN encodings are tallied apart: no audit figure
// depends on a NaN's payload.
class CudaConversions : public CudaNumerics, public ::testing::WithParamInterface<Format> {};

TEST_P(CudaConversions, EveryFloatMatchesTheDevice) {
  const Format format = GetParam();
  constexpr uint32_t kChunk = 1u << 28;
  Tally cpu_vs_device, shared_vs_device;
  uint32_t device_nan_example = 0, cpu_nan_example = 0;
  for (uint64_t first = 0; first < (1ull << 32); first += kChunk) {
    const auto native = gpu::round_bit_range(format, uint32_t(first), kChunk, true);
    const auto shared = gpu::round_bit_range(format, uint32_t(first), kChunk, false);
    std::vector<float> cpu(kChunk);
    for (uint32_t i = 0; i < kChunk; ++i) cpu[i] = bits_float(uint32_t(first) + i);
    round_to_format(format, cpu.data(), kChunk);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(kChunk); ++i) {
      const uint32_t input = uint32_t(first + uint64_t(i));
      const uint32_t d = float_bits(native[i]), c = float_bits(cpu[i]), s = float_bits(shared[i]);
      cpu_vs_device.record(input, is_nan(native[i]) && is_nan(cpu[i]), d == c);
      shared_vs_device.record(input, is_nan(native[i]) && is_nan(shared[i]), d == s);
    }
    if (first == 0x7F800000u / kChunk * kChunk) {  // the chunk holding the positive NaNs
      const uint32_t nan_input = 0x7FC00001u - uint32_t(first);
      device_nan_example = float_bits(native[nan_input]);
      cpu_nan_example = float_bits(cpu[nan_input]);
    }
  }
  std::printf("%s: cpu vs device %" PRIu64 " mismatches, %" PRIu64 " NaN encodings differ; shared source on the device vs device %" PRIu64
              " mismatches, %" PRIu64 " NaN encodings differ; NaN 0x7fc00001 -> device 0x%08x, cpu 0x%08x\n",
              std::string(format_name(format)).c_str(), uint64_t(cpu_vs_device.mismatches), uint64_t(cpu_vs_device.nan_encoding_differs),
              uint64_t(shared_vs_device.mismatches), uint64_t(shared_vs_device.nan_encoding_differs), device_nan_example, cpu_nan_example);
  EXPECT_EQ(cpu_vs_device.mismatches, 0u) << "first at input 0x" << std::hex << cpu_vs_device.first_mismatch_input;
  EXPECT_EQ(shared_vs_device.mismatches, 0u) << "first at input 0x" << std::hex << shared_vs_device.first_mismatch_input;
}

INSTANTIATE_TEST_SUITE_P(Formats, CudaConversions,
                         ::testing::Values(Format::FP16, Format::BF16, Format::FP8E4M3FN, Format::FP8E5M2),
                         [](const auto& info) { return std::string(format_name(info.param)); });

TEST_F(CudaNumerics, EveryFp8CodeDecodesAsOnTheDevice) {
  for (Format format : {Format::FP8E4M3FN, Format::FP8E5M2}) {
    const auto device = gpu::decode_all_fp8(format);
    for (uint32_t code = 0; code < 256; ++code) {
      const float ours = format == Format::FP8E4M3FN ? fp8_e4m3fn_to_float(uint8_t(code)) : fp8_e5m2_to_float(uint8_t(code));
      if (is_nan(ours) && is_nan(device[code])) continue;
      EXPECT_EQ(float_bits(ours), float_bits(device[code])) << format_name(format) << " code " << code;
    }
  }
}

// fp16 + − × ÷ on every pair of fp16 values (2^32 pairs each): the device's half instructions against the
// emulation's float math followed by one rounding (docs/numerics.md, "Op math per class").
class CudaHalfArithmetic : public CudaNumerics, public ::testing::WithParamInterface<gpu::HalfOp> {};

TEST_P(CudaHalfArithmetic, EveryPairMatchesTheDevice) {
  const gpu::HalfOp op = GetParam();
  constexpr uint32_t kRows = 4096;  // a values per launch: 2^28 results
  Tally tally;
  for (uint32_t first_a = 0; first_a < 65536; first_a += kRows) {
    const auto device = gpu::half_binary(op, first_a, kRows);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(device.size()); ++i) {
      const float a = half_to_float(uint16_t(first_a + (uint64_t(i) >> 16))), b = half_to_float(uint16_t(i & 0xFFFF));
      const float exact = op == gpu::HalfOp::Add ? a + b : op == gpu::HalfOp::Mul ? a * b : a / b;
      const uint16_t ours = float_to_half(exact);
      const bool nan_pair = is_nan(half_to_float(ours)) && is_nan(half_to_float(device[size_t(i)]));
      tally.record(uint32_t(first_a << 16 | uint32_t(i)), nan_pair, ours == device[size_t(i)]);
    }
  }
  std::printf("fp16 op %d: %" PRIu64 " mismatches of 2^32, %" PRIu64 " NaN encodings differ\n", int(op),
              uint64_t(tally.mismatches), uint64_t(tally.nan_encoding_differs));
  EXPECT_EQ(tally.mismatches, 0u) << "first at (a<<16|b) = 0x" << std::hex << tally.first_mismatch_input;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaHalfArithmetic, ::testing::Values(gpu::HalfOp::Add, gpu::HalfOp::Mul, gpu::HalfOp::Div),
                         [](const auto& info) {
                           return std::string(info.param == gpu::HalfOp::Add ? "Add" : info.param == gpu::HalfOp::Mul ? "Mul" : "Div");
                         });

// Each shared unary functor on every fp16 input, device libm against glibc (libmvec where vectorised), both
// rounded to fp16 once.
// docs/numerics.md claims at most one fp16 ulp between them, except Gelu below x = -4 where 1 + erf(x/√2)
// cancels in float and the tiny result inherits erf's float error; the table printed here is the evidence.
TEST_F(CudaNumerics, SharedUnaryFunctorsAgreeWithTheHostWithinOneHalfUlp) {
  // The host side runs the CPU backend's own loop (cpu::map_unary, vectorised through libmvec).
  std::vector<float> every_half(65536);
  for (uint32_t code = 0; code < 65536; ++code) every_half[code] = half_to_float(uint16_t(code));
  std::map<std::string, std::vector<float>> host;
#define MPA_HOST(F)                                                                              \
  host[#F].resize(65536);                                                                        \
  cpu::map_unary(every_half.data(), host[#F].data(), 65536, F{});                                \
  round_to_format(Format::FP16, host[#F].data(), 65536);
  MPA_UNARY_FLOAT_FUNCTORS(MPA_HOST)
#undef MPA_HOST
  for (const std::string& name : gpu::unary_functor_names()) {
    const auto device = gpu::unary_on_all_halves(name);
    ASSERT_EQ(device.size(), 65536u) << name;
    int worst = 0, differing = 0, worst_code = -1, cancelling = 0;
    for (uint32_t code = 0; code < 65536; ++code) {
      const float x = half_to_float(uint16_t(code));
      const float ours = host.at(name)[code], theirs = device[code];
      if (is_nan(x) || (is_nan(ours) && is_nan(theirs)) || float_bits(ours) == float_bits(theirs)) continue;
      ++differing;
      if (name == "GeluF" && x < -4) {
        ++cancelling;
        continue;
      }
      const int ulps = (is_nan(ours) || is_nan(theirs) || std::isinf(ours) != std::isinf(theirs))
                           ? 1 << 16
                           : half_ulp_distance(ours, theirs);
      if (ulps > worst) worst = ulps, worst_code = int(code);
    }
    std::printf("%-16s %5d of 65536 fp16 inputs differ (%d where the formula cancels), max %d ulp elsewhere%s\n",
                name.c_str(), differing, cancelling, worst,
                worst_code >= 0 ? (" (x = " + std::to_string(half_to_float(uint16_t(worst_code))) + ")").c_str() : "");
    EXPECT_LE(worst, 1) << name << " at x = " << half_to_float(uint16_t(worst_code));
  }
}

namespace {

std::vector<float> random_on_grid(size_t count, float lo, float hi, Format format, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  round_to_format(format, v.data(), int64_t(count));
  return v;
}

// The product in double, and sum |a_k b_k| per element (what fp32 summation error scales with).
struct ExactProduct {
  std::vector<double> value, magnitude;
};
ExactProduct exact_product(const std::vector<float>& a, const std::vector<float>& b, int M, int N, int K) {
  ExactProduct c{std::vector<double>(size_t(M) * N, 0.0), std::vector<double>(size_t(M) * N, 0.0)};
#pragma omp parallel for
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) {
        const double p = double(a[size_t(m) * K + k]) * double(b[size_t(k) * N + n]);
        c.value[size_t(m) * N + n] += p;
        c.magnitude[size_t(m) * N + n] += std::abs(p);
      }
  return c;
}

// Output ulps apart in `grid` (fp16, bf16 or tf32/fp32 counted in tf32 steps).
int ulp_distance(float x, float y, Format grid) {
  if (grid == Format::FP16) return half_ulp_distance(x, y);
  auto ordered = [](float v) {
    const int64_t bits = float_bits(v);
    return (bits & 0x80000000) ? -(bits & 0x7FFFFFFF) : bits;
  };
  return int(std::abs(ordered(x) - ordered(y)) >> (grid == Format::BF16 ? 16 : 13));
}

// max_ulp counts elements whose sum does not cancel (|result| >= sum |a_k b_k| / 16): where it cancels,
// the same few-fp32-ulp difference of summation orders spans several ulps of the small result.
struct GemmComparison {
  int differing = 0, max_ulp = 0, max_ulp_cancelling = 0;
  double emulated_max_rel = 0, device_max_rel = 0, emulated_rms = 0, device_rms = 0;
};

GemmComparison compare_gemm(gpu::GemmKind kind, const SessionOptions& options, Format grid, int M, int N, int K,
                            float lo, float hi) {
  const auto a = random_on_grid(size_t(M) * K, lo, hi, grid, 11), b = random_on_grid(size_t(K) * N, lo, hi, grid, 12);
  const auto device = gpu::gemm(kind, M, N, K, a, b);
  const Tensor emulated = OneNode("MatMul", {"a", "b"})
                              .run({float_tensor(a, {M, K}), float_tensor(b, {K, N})}, options);
  const auto exact = exact_product(a, b, M, N, K);
  GemmComparison r;
  const size_t count = exact.value.size();
  for (size_t i = 0; i < count; ++i) {
    const float e = emulated.data<float>()[i], d = device[i];
    const double x = exact.value[i];
    if (float_bits(e) != float_bits(d)) {
      ++r.differing;
      int& worst = std::abs(x) * 16 >= exact.magnitude[i] ? r.max_ulp : r.max_ulp_cancelling;
      worst = std::max(worst, ulp_distance(e, d, grid));
    }
    const double scale = std::max(std::abs(x), 1e-30);
    r.emulated_max_rel = std::max(r.emulated_max_rel, std::abs(e - x) / scale);
    r.device_max_rel = std::max(r.device_max_rel, std::abs(d - x) / scale);
    r.emulated_rms += (e - x) * (e - x);
    r.device_rms += (d - x) * (d - x);
  }
  r.emulated_rms = std::sqrt(r.emulated_rms / double(count));
  r.device_rms = std::sqrt(r.device_rms / double(count));
  std::printf("%dx%dx%d: %d of %zu outputs differ (max %d ulp, %d where the sum cancels); error vs fp64: emulated max "
              "rel %.3g rms %.3g, device max rel %.3g rms %.3g\n",
              M, N, K, r.differing, count, r.max_ulp, r.max_ulp_cancelling, r.emulated_max_rel, r.emulated_rms,
              r.device_max_rel, r.device_rms);
  return r;
}

SessionOptions options_for(Format precision, Accumulation accumulation = Accumulation::FP32) {
  SessionOptions o;
  o.precision = precision;
  o.accumulation = accumulation;
  return o;
}

}  // namespace

// fp32 accumulation: the emulation differs from cuBLAS by summation order only, so outputs agree to one
// ulp of the output format, and both errors against fp64 are the same size.
TEST_F(CudaNumerics, Fp16GemmWithFp32AccumulationMatchesCublasToOneUlp) {
  const auto r = compare_gemm(gpu::GemmKind::Fp16Accumulate32, options_for(Format::FP16), Format::FP16, 256, 256, 4096, -1, 1);
  EXPECT_LE(r.max_ulp, 1);
  EXPECT_LT(r.differing, 256 * 256 / 20);
  EXPECT_LT(r.emulated_rms, 1.5 * r.device_rms);
  EXPECT_GT(r.emulated_rms, r.device_rms / 1.5);
}

TEST_F(CudaNumerics, Bf16GemmWithFp32AccumulationMatchesCublasToOneUlp) {
  const auto r = compare_gemm(gpu::GemmKind::Bf16Accumulate32, options_for(Format::BF16), Format::BF16, 256, 256, 4096, -1, 1);
  EXPECT_LE(r.max_ulp, 1);
  EXPECT_LT(r.differing, 256 * 256 / 20);
}

// fp16 accumulation: the emulation claims to be pessimistic (docs/numerics.md): its error against fp64
// is at least the device's.
TEST_F(CudaNumerics, Fp16AccumulationModelIsNoBetterThanCublas) {
  const auto r = compare_gemm(gpu::GemmKind::Fp16Accumulate16, options_for(Format::FP16, Accumulation::FP16), Format::FP16,
                              64, 64, 4096, 0, 1);
  EXPECT_GE(r.emulated_rms, r.device_rms);
}

// How cuBLAS's TF32 path rounds fp32 operands, read off exact products: A holds probe values in its first
// column, B is 2^s in its first row and zero elsewhere, so C = tf32(x)·2^s with no rounding of the sum.
// The emulation's round_to_tf32 is RNE with subnormals kept; the device must agree on every probe.
TEST_F(CudaNumerics, Tf32OperandRoundingIsRoundToNearestEven) {
  const int M = 256, N = 256, K = 256;
  std::vector<float> probes;
  for (float base : {1.f, 1.5f, -1.f, 3.f}) {
    const float u = std::ldexp(base >= 0 ? 1.f : -1.f, -11) * std::abs(base >= 2 ? 2.f : 1.f);  // half a tf32 step
    probes.insert(probes.end(), {base + u, base + 3 * u, base + u + std::ldexp(u, -12), base + u - std::ldexp(u, -12)});
  }
  probes.push_back(std::ldexp(1.f, -130) * 1.75f);  // fp32 subnormals: are they flushed?
  probes.push_back(std::ldexp(1.f, -140) * 1.3f);
  auto random = random_on_grid(size_t(M), -1e3f, 1e3f, Format::FP32, 5);
  for (size_t i = probes.size(); i < size_t(M); ++i) probes.push_back(random[i]);
  const float scale = std::ldexp(1.f, 100);
  std::vector<float> a(size_t(M) * K, 0.f), b(size_t(K) * N, 0.f);
  for (int m = 0; m < M; ++m) a[size_t(m) * K] = probes[size_t(m)];
  for (int n = 0; n < N; ++n) b[size_t(n)] = scale;
  const auto c = gpu::gemm(gpu::GemmKind::Tf32, M, N, K, a, b);
  int rne = 0, away = 0, truncate = 0, exact = 0;
  for (int m = 0; m < M; ++m) {
    const float x = probes[size_t(m)], got = c[size_t(m) * N] / scale;
    const uint32_t bits = float_bits(x);
    rne += got == round_to_tf32(x);
    away += got == bits_float((bits + 0x1000u) & 0xFFFFE000u);
    truncate += got == bits_float(bits & 0xFFFFE000u);
    exact += got == x;
    if (got != round_to_tf32(x)) std::printf("tf32 probe %.9g: device %.9g, round_to_tf32 %.9g\n", x, got, round_to_tf32(x));
  }
  std::printf("tf32 operand rounding over %d probes: RNE %d, round-half-away %d, truncation %d, unrounded %d\n", M, rne, away,
              truncate, exact);
  EXPECT_EQ(rne, M);
}
