// The math of `mpaudit tensors` on hand-made values whose answers are worked out here: the scale window's
// two bounds (overflow from absmax, flushes from counts by exponent with exact powers of two on the flush
// limit), the static loss scale, dynamic loss scaling with GradScaler's rules and DeepSpeed's hysteresis,
// vanishing updates, natural step order. The numpy oracle (tests/tensors) checks the same on files.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tensors/loss_scale.h"
#include "tensors/master_weights.h"
#include "tensors/tensor_files.h"
#include "tensors/tensor_stats.h"

using namespace mpa;
using namespace mpa::tensors;

namespace {

MagnitudeExponents magnitudes_of(const std::vector<double>& values) {
  MagnitudeExponents m;
  for (double v : values) m.add(std::fabs(v));
  return m;
}

TEST(ScaleWindow, FlushLimitsArePowersOfTwo) {
  EXPECT_EQ(flush_limit_log2(Format::FP16), -25);
  EXPECT_EQ(flush_limit_log2(Format::BF16), -134);
  EXPECT_EQ(flush_limit_log2(Format::FP8E4M3FN), -10);
  EXPECT_EQ(flush_limit_log2(Format::FP8E5M2), -17);
}

TEST(ScaleWindow, UpperBoundIsTheLargestScaleWithoutOverflow) {
  EXPECT_EQ(largest_safe_scale_log2(1.0, Format::FP16), 15);     // 2^15 <= 65504 < 2^16
  EXPECT_EQ(largest_safe_scale_log2(65504.0, Format::FP16), 0);  // exactly the max: no overflow
  EXPECT_EQ(largest_safe_scale_log2(65505.0, Format::FP16), -1);
  EXPECT_EQ(largest_safe_scale_log2(448.0, Format::FP8E4M3FN), 0);
  EXPECT_EQ(largest_safe_scale_log2(1e-3, Format::FP16), 25);  // 1e-3 * 2^25 = 33554 <= 65504
}

TEST(ScaleWindow, ExactPowersOfTwoOnTheLimitFlush) {
  // 2^-25 is exactly half the smallest fp16 subnormal: it rounds (ties to even) to zero; 2^-25 * 1.5 does not.
  const MagnitudeExponents m = magnitudes_of({std::ldexp(1.0, -25), std::ldexp(1.5, -25), 1.0});
  EXPECT_EQ(flushed_at_scale(m, Format::FP16, 0), 1);
  EXPECT_EQ(flushed_at_scale(m, Format::FP16, 1), 0);
  EXPECT_EQ(flushed_at_scale(m, Format::FP16, -1), 2);   // 1.5 * 2^-26 <= 2^-25
  EXPECT_EQ(flushed_at_scale(m, Format::FP16, -26), 3);  // 2^-26 <= 2^-25 as well
}

TEST(ScaleWindow, LowerBoundKeepsFlushesWithinTheFraction) {
  // 999 values of 1 and one of 2^-30: at 0.1 % one flush is allowed, so only overflow bounds the scale
  // from above and nothing from below short of flushing the 1s.
  std::vector<double> values(999, 1.0);
  values.push_back(std::ldexp(1.0, -30));
  const MagnitudeExponents m = magnitudes_of(values);
  const ScaleWindow w = scale_window(m, 1.0, 0, Format::FP16, 1e-3);
  ASSERT_TRUE(w.lo_log2 && w.hi_log2);
  EXPECT_EQ(*w.hi_log2, 15);
  EXPECT_EQ(*w.lo_log2, -24);  // at 2^-25 the 1s reach 2^-25 and flush too
  EXPECT_FALSE(w.empty);
  EXPECT_DOUBLE_EQ(w.flush_fraction_at_hi, 0.0);
  // With no flush allowed the tiny value needs 2^5 (2^-30 * 2^5 = 2^-25 still flushes, so 2^6).
  const ScaleWindow strict = scale_window(m, 1.0, 0, Format::FP16, 0.0);
  EXPECT_EQ(*strict.lo_log2, 6);
}

TEST(ScaleWindow, EmptyWhenRangeIsWiderThanTheFormat) {
  // 1e4 and 1e-9 in one tensor span more than fp16's 40 binades: no scale keeps both.
  const MagnitudeExponents m = magnitudes_of({1e4, 1e-9});
  const ScaleWindow w = scale_window(m, 1e4, 0, Format::FP16, 0.0);
  EXPECT_TRUE(w.empty);
  EXPECT_GT(*w.lo_log2, *w.hi_log2);
  EXPECT_NE(w.reason.find("largest scale without overflow"), std::string::npos);
  EXPECT_FALSE(scale_window(m, 1e4, 0, Format::BF16, 0.0).empty);  // bf16's range holds them
}

TEST(ScaleWindow, NonFiniteAndEmptyTensorsAreSaidPlainly) {
  const ScaleWindow nan = scale_window(magnitudes_of({1.0}), 1.0, 2, Format::FP16, 1e-3);
  EXPECT_TRUE(nan.empty);
  EXPECT_NE(nan.reason.find("2 NaN/Inf"), std::string::npos);
  const ScaleWindow none = scale_window(MagnitudeExponents{}, 0, 0, Format::FP16, 1e-3);
  EXPECT_FALSE(none.empty);
  EXPECT_FALSE(none.lo_log2 || none.hi_log2);
}

TEST(TensorStats, FusedPassMatchesTheProbesOverChunksAndPaths) {
  // Two full chunks and a tail; NaN in the second chunk sends it down the general path.
  Tensor t(DType::Float32, {40000});
  float* x = t.data<float>();
  for (int i = 0; i < 40000; ++i) x[i] = static_cast<float>(std::ldexp(1.0 + (i % 7) / 8.0, (i % 60) - 40));
  x[20000] = NAN;
  x[30000] = 0;
  const Format formats[] = {Format::FP16, Format::FP8E4M3FN};
  const TensorStats s = analyse_tensor(t, formats, 1e-3);
  EXPECT_EQ(s.range.count, 40000);
  EXPECT_EQ(s.range.nan, 1);
  EXPECT_EQ(s.range.zeros, 1);
  for (size_t k = 0; k < 2; ++k) {
    const probes::FormatFit reference = probes::FormatFit::of(t, formats[k]);
    EXPECT_EQ(s.formats[k].fit.overflow, reference.overflow);
    EXPECT_EQ(s.formats[k].fit.flush_to_zero, reference.flush_to_zero);
    EXPECT_EQ(s.formats[k].fit.subnormal, reference.subnormal);
    EXPECT_EQ(s.formats[k].fit.significant_flush, reference.significant_flush);
    EXPECT_TRUE(s.formats[k].window.empty);  // the NaN
  }
  probes::ExpHistogram::Chunk chunk;
  for (int i = 0; i < 40000; ++i) chunk.add(x[i]);
  probes::ExpHistogram expected;
  expected.absorb(chunk);
  EXPECT_EQ(s.histogram.counts, expected.counts);
}

// [SECTION] Loss scale

StepGradients step_with(const std::string& name, double absmax, int64_t nonfinite = 0) {
  StepGradients step{name, {}, magnitudes_of({absmax})};
  step.gradients.push_back(
      {"g", absmax, nonfinite, scale_window(step.magnitudes, absmax, nonfinite, Format::FP16, 1e-3)});
  return step;
}

TEST(LossScale, StaticIsTheLargestPowerOfTwoSafeForEveryGradient) {
  const std::vector<StepGradients> steps = {step_with("a", 0.5), step_with("b", 3.0), step_with("c", 1.0, 4)};
  LossScaleOptions options;
  const StaticScale s = recommend_static_scale(steps, options);
  ASSERT_TRUE(s.scale_log2);
  EXPECT_EQ(*s.scale_log2, 14);  // 3 * 2^14 = 49152 <= 65504 < 3 * 2^15
  EXPECT_EQ(s.limited_by, "b/g");
  EXPECT_DOUBLE_EQ(s.headroom_bits, std::log2(65504.0 / 49152.0));
  EXPECT_EQ(s.nonfinite_gradients, std::vector<std::string>{"c/g"});
}

TEST(LossScale, GradScalerBacksOffOnOverflowAndGrowsAfterTheInterval) {
  // absmax 1: overflow above 2^15. Start at 2^17: two skipped steps, then clean ones grow every 2 steps.
  std::vector<StepGradients> steps;
  for (int i = 0; i < 7; ++i) steps.push_back(step_with(std::to_string(i), 1.0));
  LossScaleOptions options;
  options.initial_log2 = 17;
  options.growth_interval = 2;
  const DynamicScale d = simulate_dynamic_scale(steps, options);
  const std::vector<int> scales = {17, 16, 15, 15, 16, 15, 15};
  const std::vector<bool> skipped = {true, true, false, false, true, false, false};
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(d.steps[i].scale_log2, scales[i]) << "step " << i;
    EXPECT_EQ(d.steps[i].skipped, skipped[i]) << "step " << i;
  }
  EXPECT_EQ(d.skipped, 3);
  EXPECT_EQ(d.final_scale_log2, 16);
  EXPECT_NE(d.steps[0].reason.find("g: absmax 1 x 2^17"), std::string::npos);
}

TEST(LossScale, HysteresisKeepsTheScaleForTheFirstOverflows) {
  // DeepSpeed's delayed_shift 2: the first overflow skips the step but keeps the scale; the second backs off,
  // and so does every later one until a growth restores the allowance.
  std::vector<StepGradients> steps;
  for (int i = 0; i < 4; ++i) steps.push_back(step_with(std::to_string(i), 4.0));  // safe up to 2^13
  LossScaleOptions options;
  options.initial_log2 = 15;
  options.hysteresis = 2;
  const DynamicScale d = simulate_dynamic_scale(steps, options);
  EXPECT_EQ(d.steps[0].scale_log2, 15);
  EXPECT_EQ(d.steps[1].scale_log2, 15);  // kept after the first overflow
  EXPECT_EQ(d.steps[2].scale_log2, 14);
  EXPECT_EQ(d.steps[3].scale_log2, 13);
  EXPECT_FALSE(d.steps[3].skipped);
  EXPECT_EQ(d.skipped, 3);
}

TEST(LossScale, NonFiniteGradientsSkipAtAnyScale) {
  LossScaleOptions options;
  options.initial_log2 = -10;
  const DynamicScale d = simulate_dynamic_scale({step_with("s", 1.0, 1)}, options);
  EXPECT_TRUE(d.steps[0].skipped);
  EXPECT_NE(d.steps[0].reason.find("1 NaN/Inf"), std::string::npos);
}

// [SECTION] Master weights

TEST(MasterWeights, UpdatesBelowHalfAnUlpVanish) {
  // fp16 ulp of 1 is 2^-10: 2^-12 vanishes, 2^-10 does not; bf16's ulp is 2^-7, so both vanish there.
  const Tensor w = Tensor::from_vector<float>({1, 1, 1, 0, NAN}, {5});
  const Tensor d = Tensor::from_vector<float>({0x1p-12f, 0x1p-10f, 0, 0x1p-12f, 1}, {5});
  const VanishingUpdates v = vanishing_updates(w, d, std::nullopt, "w");
  EXPECT_EQ(v.updated, 3);
  EXPECT_EQ(v.nonfinite, 1);
  EXPECT_EQ(v.zero_weight, 1);
  EXPECT_EQ(v.vanished[0], 1);  // fp16: only 1 + 2^-12
  EXPECT_EQ(v.vanished[1], 2);  // bf16: both updates of 1
  EXPECT_EQ(v.ratio.counts[static_cast<size_t>(probes::ExpHistogram::bin_of(0x1p-12))], 1);
}

TEST(MasterWeights, LearningRateTurnsGradientsIntoUpdates) {
  const Tensor w = Tensor::from_vector<float>({1}, {1});
  const Tensor g = Tensor::from_vector<float>({-0x1p-8f}, {1});
  EXPECT_EQ(vanishing_updates(w, g, 0.0625, "w").vanished[0], 1);  // -2^-4 * -2^-8 = 2^-12: below half an ulp
  EXPECT_EQ(vanishing_updates(w, g, 1.0, "w").vanished[0], 0);     // 2^-8 survives
}

TEST(MasterWeights, PairingByPattern) {
  const MasterPairing p = MasterPairing::parse("weight.*=update.*");
  EXPECT_EQ(p.update_for("weight.fc1"), "update.fc1");
  EXPECT_FALSE(p.update_for("update.fc1"));
  EXPECT_TRUE(p.is_update("update.fc1"));
  EXPECT_THROW(MasterPairing::parse("weight=update"), Error);
}

TEST(TensorFiles, StepsSortNaturally) {
  EXPECT_TRUE(natural_less("step_2", "step_10"));
  EXPECT_FALSE(natural_less("step_10", "step_2"));
  EXPECT_TRUE(natural_less("step_02", "step_3"));
  EXPECT_TRUE(natural_less("a", "b"));
  EXPECT_FALSE(natural_less("step_7", "step_7"));
}

}  // namespace
