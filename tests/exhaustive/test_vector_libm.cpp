// The CPU backend's elementwise loops call libm through glibc's libmvec (src/kernels/math.h): the same
// functions in 4/8/16 lanes (map_unary runs its AVX2 build of the loop on CPUs that have AVX2, so this test
// measures the variant the machine runs), not correctly rounded and not bit-identical to the
// scalar ones. Measured here
// against the scalar functions over every 16th float32 (2^28 inputs per function), in float ulps and in
// how often the fp16-rounded result moves. Numbers printed for docs/numerics.md.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <vector>

#include "backends/cpu/elementwise.h"
#include "kernels/unary.h"
#include "tensor/formats.h"

using namespace mpa;

namespace {

// Float ulps between two finite floats of the same sign class (ordered bit patterns).
int64_t float_ulps(float a, float b) {
  auto ordered = [](float v) {
    const int64_t bits = float_bits(v);
    return (bits & 0x80000000) ? -(bits & 0x7FFFFFFF) : bits;
  };
  return std::llabs(ordered(a) - ordered(b));
}

struct Agreement {
  int64_t max_ulps = 0, differing = 0, fp16_differing = 0, nonfinite_mismatch = 0;
  float worst_input = 0;
};

// `vector` runs the functor through cpu::map_unary (vectorised); the scalar side calls it through a
// volatile function pointer, which the compiler cannot vectorise.
template <class F>
Agreement compare_all(float (*scalar_function)(float)) {
  float (*volatile scalar)(float) = scalar_function;
  constexpr uint32_t kBlock = 1u << 20, kStride = 16;
  std::vector<float> in(kBlock), out(kBlock);
  Agreement a;
  for (uint64_t first = 0; first < (1ull << 32); first += uint64_t(kBlock) * kStride) {
    for (uint32_t i = 0; i < kBlock; ++i) in[i] = bits_float(uint32_t(first + uint64_t(i) * kStride));
    cpu::map_unary(in.data(), out.data(), kBlock, F{});
    for (uint32_t i = 0; i < kBlock; ++i) {
      const float s = scalar(in[i]), v = out[i];
      if (float_bits(s) == float_bits(v) || (std::isnan(s) && std::isnan(v))) continue;
      ++a.differing;
      if (!std::isfinite(s) || !std::isfinite(v)) {
        ++a.nonfinite_mismatch;
        continue;
      }
      a.fp16_differing += float_to_half(s) != float_to_half(v);
      const int64_t ulps = float_ulps(s, v);
      if (ulps > a.max_ulps) a.max_ulps = ulps, a.worst_input = in[i];
    }
  }
  return a;
}

float scalar_exp(float x) { return dmath::exp(x); }
float scalar_log(float x) { return dmath::log(x); }
float scalar_tanh(float x) { return dmath::tanh(x); }
float scalar_erf(float x) { return dmath::erf(x); }
float scalar_sigmoid(float x) { return SigmoidF{}(x); }

void expect_close(const char* name, const Agreement& a, int64_t max_ulps) {
  std::printf("%-8s %" PRId64 " of 2^28 differ from scalar glibc, max %" PRId64 " float ulp (x = %.9g), fp16 result moves for %" PRId64
              ", non-finite mismatches %" PRId64 "\n",
              name, a.differing, a.max_ulps, a.worst_input, a.fp16_differing, a.nonfinite_mismatch);
  EXPECT_LE(a.max_ulps, max_ulps) << name << " at x = " << a.worst_input;
  EXPECT_EQ(a.nonfinite_mismatch, 0) << name;
  EXPECT_LT(a.fp16_differing, int64_t(1) << 20) << name;  // a rounding boundary hit, not a systematic shift
}

}  // namespace

// libmvec documents up to 4 ulp for these float functions; measured with 4 lanes (SSE) and 8 (AVX2) alike:
// exp 3, log 4, tanh 2, erf 2, sigmoid 4 (its exp and division), each moving the fp16-rounded result (by one
// fp16 ulp) for under 0.002% of inputs.
TEST(VectorLibm, ExpLogTanhErfSigmoidStayWithinFourUlpsOfScalarGlibc) {
  expect_close("exp", compare_all<ExpF>(scalar_exp), 4);
  expect_close("log", compare_all<LogF>(scalar_log), 4);
  expect_close("tanh", compare_all<TanhF>(scalar_tanh), 4);
  expect_close("erf", compare_all<ErfF>(scalar_erf), 4);
  expect_close("sigmoid", compare_all<SigmoidF>(scalar_sigmoid), 4);
}
