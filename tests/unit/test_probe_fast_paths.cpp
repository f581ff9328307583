// The probes' vector kernels (probes/fast_paths.h) against their per-element definitions (`Chunk::add`):
// counts, extremes and histograms must be identical, sums equal up to reassociation. The data covers
// what changes the kernels' paths: zeros (half of a ReLU output), float subnormals, spreads wider than
// the histogram's 16-field vector window, lengths that are not a multiple of the 64-value step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "backends/cpu/format_rounding.h"
#include "probes/fast_paths.h"
#include "probes/format_fit.h"
#include "runtime/precision.h"
#include "tensor/format_storage.h"

using namespace mpa;
using namespace mpa::probes;

namespace {

struct Case {
  const char* name;
  std::vector<float> values;
};

std::vector<Case> cases() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  auto make = [&](int64_t n, auto&& value) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = value();
    return v;
  };
  return {
      {"normal", make(16384, [&] { return normal(rng); })},
      {"relu", make(16381, [&] { return std::max(0.f, normal(rng)); })},
      // log-uniform magnitudes over 2^-149 (float subnormals) .. 2^100, both signs
      {"wide", make(9999, [&] { return (unit(rng) < 0.5f ? -1.f : 1.f) * std::exp2(-149.f + 249.f * unit(rng)); })},
      {"subnormal", make(4097, [&] { return std::ldexp(normal(rng), -135); })},
      {"zeros", make(200, [] { return 0.f; })},
      // one -1e9 (a mask value) among small values: nearly all lie below the histogram's window
      {"outlier",
       make(5000, [&, first = true]() mutable { return std::exchange(first, false) ? -1e9f : normal(rng); })},
      {"short", make(37, [&] { return 1e4f * normal(rng); })},
  };
}

}  // namespace

TEST(ProbeFastPaths, HistogramEqualsPerValueBins) {
  for (const Case& c : cases()) {
    ExpHistogram::Chunk fast_hist, general;
    fast::histogram(c.values.data(), static_cast<int64_t>(c.values.size()), fast_hist);
    for (float v : c.values) general.add(v);
    EXPECT_TRUE(std::equal(std::begin(fast_hist.counts), std::end(fast_hist.counts), std::begin(general.counts)))
        << c.name;
  }
}

TEST(ProbeFastPaths, RangeAndFormatFitEqualPerValueFigures) {
  const FormatFit::Bounds fp16(Format::FP16);
  for (const Case& c : cases()) {
    const int64_t n = static_cast<int64_t>(c.values.size());
    RangeProbe::Chunk fast_range, range;
    FormatFit::Chunk fast_fit, fit;
    fast::range(c.values.data(), n, fast_range);
    fast::format_fit(c.values.data(), n, fp16, fast_fit);
    for (float v : c.values) range.add(v), fit.add(v, fp16);
    EXPECT_EQ(fast_range.count, range.count) << c.name;
    EXPECT_EQ(fast_range.zeros, range.zeros) << c.name;
    EXPECT_EQ(fast_range.min, range.min) << c.name;
    EXPECT_EQ(fast_range.max, range.max) << c.name;
    EXPECT_NEAR(fast_range.sum, range.sum, 1e-12 * range.sum_sq + 1e-300) << c.name;
    EXPECT_NEAR(fast_range.sum_sq, range.sum_sq, 1e-12 * range.sum_sq) << c.name;
    EXPECT_EQ(fast_fit.overflow, fit.overflow) << c.name;
    EXPECT_EQ(fast_fit.flush_to_zero, fit.flush_to_zero) << c.name;
    EXPECT_EQ(fast_fit.subnormal, fit.subnormal) << c.name;
    EXPECT_EQ(fast_fit.nonzero, fit.nonzero) << c.name;
  }
}

// Every format's boundaries, scaled or not, and the counts of FormatFit::of on a tensor through the fast path
// (finite float32) and the general one (a NaN in the chunk): with FP8 absmax scaling the absmax itself
// lands on the format's max and never counts as overflow, whichever path measures it.
TEST(ProbeFastPaths, FormatFitAgreesWithStorageAcrossPathsAndScales) {
  for (Format f : {Format::FP16, Format::BF16, Format::FP8E4M3FN, Format::FP8E5M2, Format::TF32}) {
    const FormatFit::Bounds b(f);
    for (double bound : {b.max_finite, b.flush_limit, b.normal_limit})
      EXPECT_EQ(static_cast<double>(static_cast<float>(bound)), bound) << format_name(f) << " bound " << bound;
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> log_magnitude(-12.f, 12.f);
  for (Format f : {Format::FP8E4M3FN, Format::FP8E5M2}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> values(64);
      for (float& v : values) v = std::exp2(log_magnitude(rng)) * (trial % 2 ? 1.f : -1.f);
      float absmax = 0;
      for (float v : values) absmax = std::max(absmax, std::fabs(v));
      const double scale = absmax_scale(f, absmax);
      const FormatFit fast_fit = FormatFit::of(Tensor::from_vector<float>(values, {64}), f, scale);
      values.push_back(NAN);
      const FormatFit general = FormatFit::of(Tensor::from_vector<float>(values, {65}), f, scale);
      EXPECT_EQ(fast_fit.overflow, 0) << format_name(f) << " absmax " << absmax;
      EXPECT_EQ(general.overflow, 0) << format_name(f) << " absmax " << absmax;
      EXPECT_EQ(fast_fit.flush_to_zero, general.flush_to_zero);
      EXPECT_EQ(fast_fit.significant_flush, general.significant_flush);
      EXPECT_EQ(fast_fit.subnormal, general.subnormal);
      // And each count as storage gives it: a value stored as zero was flushed.
      std::vector<float> stored(values.begin(), values.end() - 1);
      round_to_format_scaled(f, stored.data(), 64, static_cast<float>(scale));
      int64_t zeros = 0;
      for (float v : stored) zeros += v == 0.f;
      EXPECT_EQ(general.flush_to_zero, zeros) << format_name(f) << " absmax " << absmax;
    }
  }
}

TEST(ProbeFastPaths, DivergenceEqualsPerValueFigures) {
  const Divergence::Params params(Format::FP16, Tolerances{});
  std::mt19937 rng(11);
  std::normal_distribution<float> noise;
  for (const Case& c : cases()) {
    const int64_t n = static_cast<int64_t>(c.values.size());
    std::vector<float> target(c.values);
    for (float& t : target) t *= 1 + 1e-3f * noise(rng);
    // The target as the last of four, so that it passes through the three-target kernel and the one-target one.
    const float* targets[4] = {c.values.data(), c.values.data(), c.values.data(), target.data()};
    Divergence::Chunk chunks[4], pair[2], div;
    fast::divergences(c.values.data(), targets, 4, n, params, chunks);
    // And as the second of two: the two-target kernel (a node whose isolated run is its stored reference).
    fast::divergences(c.values.data(), targets + 2, 2, n, params, pair);
    for (int64_t i = 0; i < n; ++i) div.add(c.values[size_t(i)], target[size_t(i)], params);
    EXPECT_EQ(chunks[0].sum_sq_err, 0) << c.name;
    EXPECT_EQ(pair[0].sum_sq_err, 0) << c.name;
    for (const Divergence::Chunk* fast_div : {&chunks[3], &pair[1]}) {
      EXPECT_EQ(fast_div->compared, div.compared) << c.name;
      EXPECT_EQ(fast_div->mismatches, div.mismatches) << c.name;
      EXPECT_EQ(fast_div->max_abs, div.max_abs) << c.name;
      EXPECT_EQ(fast_div->max_rel, div.max_rel) << c.name;
      EXPECT_EQ(fast_div->max_ulp, div.max_ulp) << c.name;
      for (auto [fast_sum, sum] :
           {std::pair{fast_div->sum_abs, div.sum_abs}, {fast_div->sum_sq_err, div.sum_sq_err},
            {fast_div->sum_ref_sq, div.sum_ref_sq}, {fast_div->sum_tgt_sq, div.sum_tgt_sq},
            {fast_div->sum_ref_tgt, div.sum_ref_tgt}, {fast_div->sum_ulp, div.sum_ulp}})
        EXPECT_NEAR(fast_sum, sum, 1e-12 * std::fabs(sum)) << c.name;
    }
  }
}

// The stored reference that the divergence pass makes chunk by chunk equals the reference stored whole by
// tensor_in_format (the copy consumers' isolated runs read): the same divergences, bit for bit, for every
// storage format, an FP8 per-tensor scale, an FP64 reference, and chunks with Inf/NaN (the general code).
TEST(ProbeFastPaths, StoredReferenceMadeInThePassEqualsTheStoredCopy) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 30.f);
  const int64_t n = 2 * kChunk + 777;  // two whole chunks and a short one
  std::vector<float> ref(static_cast<size_t>(n)), run(static_cast<size_t>(n));
  for (size_t i = 0; i < ref.size(); ++i) {
    ref[i] = normal(rng) * std::exp2(static_cast<float>(static_cast<int>(i % 40) - 20));
    run[i] = ref[i] * (1 + 1e-3f * normal(rng) / 30);
  }
  ref[kChunk + 5] = INFINITY;  // the second chunk takes the general code
  run[kChunk + 9] = NAN;
  const Tensor reference = Tensor::from_vector<float>(ref, {n});
  const Tensor target_run = Tensor::from_vector<float>(run, {n});
  const Tensor wide_reference = cpu::widen_to_double(reference);
  // A tensor the model itself stores in 16 bits keeps its values in every format (tensor_in_format).
  std::vector<float> half_values(ref);
  half_values[kChunk + 5] = 3.f;  // finite: fp16 storage has no room for the Inf case's neighbours
  Tensor half_reference(DType::Float16, {n});
  for (int64_t i = 0; i < n; ++i) half_reference.data<Float16>()[i] = store<Float16>(half_values[size_t(i)]);
  struct Case {
    Format format;
    double scale;
    const Tensor* ref;
  };
  for (const Case& c : {Case{Format::FP16, 1, &reference}, Case{Format::BF16, 1, &reference},
                        Case{Format::FP8E4M3FN, 0.37, &reference}, Case{Format::FP32, 1, &reference},
                        Case{Format::FP16, 1, &wide_reference}, Case{Format::BF16, 1, &half_reference}}) {
    const Divergence::Params params(c.format, Tolerances{});
    const Tensor stored = cpu::tensor_in_format(*c.ref, c.format, c.scale);
    ExpHistogram hist_made, hist_copy;
    const auto made = Divergence::of_stored_and_each(*c.ref, {c.format, c.scale}, {&target_run}, params, 0, {&hist_made});
    const auto copy = Divergence::of_each(*c.ref, {&stored, &target_run}, params, 0, {nullptr, &hist_copy});
    ASSERT_EQ(made.size(), 2u);
    for (size_t j = 0; j < 2; ++j)
      EXPECT_EQ(made[j].to_json().dump(), copy[j].to_json().dump()) << format_name(c.format) << " run " << j;
    EXPECT_EQ(hist_made.to_json().dump(), hist_copy.to_json().dump()) << format_name(c.format);
    EXPECT_GT(made[0].compared, 0) << format_name(c.format);
  }
}

// holds_in_format, which the audit asks whether a run read a reference input exactly as stored in the format, says
// what comparing with the stored copy (tensor_in_format) says: for float32 and float64 references, with a
// difference in the first block, the last block (after two whole blocks of 4096) or none, and a size mismatch.
TEST(ProbeFastPaths, HoldsInFormatAnswersAsTheStoredCopyDoes) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 30.f);
  const int64_t n = 2 * 4096 + 123;
  std::vector<float> ref(static_cast<size_t>(n));
  for (float& v : ref) v = normal(rng);
  const Tensor reference = Tensor::from_vector<float>(ref, {n});
  const Tensor wide_reference = cpu::widen_to_double(reference);
  for (const Tensor* r : {&reference, &wide_reference})
    for (Format format : {Format::FP16, Format::BF16, Format::FP8E5M2, Format::TF32}) {
      SCOPED_TRACE(std::string(format_name(format)) + (r == &reference ? " float32" : " float64"));
      const Tensor stored = cpu::tensor_in_format(*r, format);
      EXPECT_TRUE(holds_in_format(stored, *r, format));
      for (const int64_t at : {int64_t{0}, n - 1}) {
        Tensor changed = stored.clone();
        changed.data<float>()[at] = std::nextafter(changed.data<float>()[at], INFINITY);
        EXPECT_FALSE(holds_in_format(changed, *r, format)) << "differs at " << at;
      }
      EXPECT_FALSE(holds_in_format(reference, *r, format)) << "the reference itself is not on the grid";
    }
  EXPECT_FALSE(holds_in_format(Tensor::from_vector<float>(std::vector<float>(ref.begin(), ref.end() - 1), {n - 1}),
                               reference, Format::FP32));
}

// An fp64 reference is stored in a format with one rounding from double: 1 + 2^-11 + 2^-30 lies just above
// fp16's tie between 1 and 1 + 2^-10, which a detour through float (1 + 2^-11, a tie, to even: 1) loses.
TEST(ProbeFastPaths, DoublesAreRoundedOnceIntoTheFormat) {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::vector<double> values = {1 + std::ldexp(1, -11) + std::ldexp(1, -30), -(1 + std::ldexp(1, -11) + std::ldexp(1, -40)),
                                1 + std::ldexp(1, -11), 1e300, 1e-300};
  for (int i = 0; i < 2000; ++i) {
    // a tie of fp16 or bf16 nudged by a few double ulps either way
    const double tie = std::ldexp(1 + std::ldexp(static_cast<double>(rng() % 1024) + 0.5, -10), exponent(rng));
    values.push_back(tie * (1 + std::ldexp(static_cast<double>(static_cast<int>(rng() % 7) - 3), -45)));
  }
  const Tensor t = Tensor::from_vector<double>(values, {static_cast<int64_t>(values.size())});
  const Tensor fp16 = cpu::tensor_in_format(t, Format::FP16), bf16 = cpu::tensor_in_format(t, Format::BF16);
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    // fp16: the compiler's double -> _Float16 conversion rounds once, correctly.
    EXPECT_EQ(fp16.data<float>()[i], static_cast<float>(static_cast<_Float16>(v))) << v;
    if (!(std::fabs(v) < 3e38)) continue;
    // bf16: the two grid values around v (floats with 16 low zero bits), the nearer one, the even on a tie.
    float toward_zero = static_cast<float>(v);
    if (std::fabs(static_cast<double>(toward_zero)) > std::fabs(v)) toward_zero = std::nextafter(toward_zero, 0.f);
    const uint32_t low_bits = __builtin_bit_cast(uint32_t, toward_zero) & 0xFFFF0000u;
    const double below = __builtin_bit_cast(float, low_bits), above = __builtin_bit_cast(float, low_bits + 0x10000u);
    const double d_below = std::fabs(v - below), d_above = std::fabs(above - v);
    const double expected = d_below < d_above ? below : d_above < d_below ? above : (low_bits & 0x10000u) ? above : below;
    EXPECT_EQ(static_cast<double>(bf16.data<float>()[i]), expected) << v;
  }
  EXPECT_EQ(cpu::tensor_in_format(t, Format::FP16).data<float>()[0], 1.0009765625f);
}

// On a scaled FP8 grid a correctly rounded value is at most half a spacing of that grid away: the stored
// reference's max_ulp, measured in the scaled grid's units, lies in (0.25, 0.5] for values spread over it.
TEST(ProbeFastPaths, UlpsOfAScaledGridAreItsOwn) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> spread(0.001f, 0.011f);
  std::vector<float> values(4096);
  for (float& v : values) v = spread(rng);
  const Tensor ref = Tensor::from_vector<float>(values, {4096});
  for (Format f : {Format::FP8E4M3FN, Format::FP8E5M2}) {
    const double scale = absmax_scale(f, 0.011);
    const Divergence::Params params = Divergence::Params(f, Tolerances{}).scaled_by(scale);
    const Divergence stored = Divergence::of_stored_and_each(ref, {f, scale}, {}, params, 0).front();
    EXPECT_LE(stored.max_ulp, 0.5) << format_name(f);
    EXPECT_GT(stored.max_ulp, 0.25) << format_name(f);
    EXPECT_LT(stored.mean_ulp(), 0.5) << format_name(f);
  }
}
