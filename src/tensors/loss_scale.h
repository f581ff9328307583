// Loss scaling over gradient tensors, for the format the scaled gradients are computed in (FP16 by default).
// A gradient overflows at scale S when it holds NaN/Inf or absmax * S exceeds the format's largest finite
// value (FormatFit's overflow); its values flush when |g| * S is at most half the smallest subnormal.
// The dumped gradients are taken as the unscaled gradients: the scaled ones are modelled as g * S.
//
// Static: the largest power of two that overflows no gradient of any step, with the bits left between the
// largest scaled gradient and the format's maximum, and the window of scales that also keeps every
// gradient's flushed fraction within the limit.
//
// Dynamic, as torch.cuda.amp.GradScaler: start at initial_scale; a step whose gradients overflow is skipped
// and the scale multiplied by backoff_factor (growth count reset); after growth_interval clean steps in a
// row the scale is multiplied by growth_factor. With hysteresis H > 1, as DeepSpeed's DynamicLossScaler
// (delayed_shift): the first H - 1 overflows since the last growth skip the step but keep the scale, and a
// growth restores the allowance to H. H = 1 is GradScaler exactly.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tensors/tensor_stats.h"

namespace mpa::tensors {

struct LossScaleOptions {
  Format format = Format::FP16;
  // Powers of two (as log2), so that every scale is one and flush counts at it are exact.
  int initial_log2 = 16;
  int growth_log2 = 1;    // growth_factor 2
  int backoff_log2 = -1;  // backoff_factor 0.5
  int64_t growth_interval = 2000;
  int hysteresis = 1;
};

// A gradient tensor as loss scaling sees it.
struct GradientFigures {
  std::string name;
  double absmax = 0;
  int64_t nonfinite = 0;
  ScaleWindow window;  // in the loss-scale format
};

struct StepGradients {
  std::string step;
  std::vector<GradientFigures> gradients;
  MagnitudeExponents magnitudes;  // of every gradient of the step
};

struct StaticScale {
  std::optional<int> scale_log2;                 // none: no gradient with a finite nonzero value
  std::string limited_by;                        // "STEP/TENSOR" whose absmax sets it
  double headroom_bits = NAN;                    // log2(max finite / (largest |g| * scale))
  double flush_fraction = NAN;                   // of all nonzero gradient values, at the scale
  ScaleWindow window;                            // scales safe for every gradient: [largest lo, smallest hi]
  std::vector<std::string> nonfinite_gradients;  // "STEP/TENSOR" holding NaN/Inf: overflow at any scale
  std::string reason;                            // when there is no scale
};

struct DynamicStep {
  std::string step;
  int scale_log2 = 0;  // the scale this step ran at
  bool skipped = false;
  std::string reason;                    // why skipped: the first overflowing gradient
  std::vector<std::string> overflowing;  // every overflowing gradient of the step
  double flush_fraction = NAN;           // of the step's nonzero gradient values at the scale
  int next_scale_log2 = 0;               // after the step's update
};

struct DynamicScale {
  std::vector<DynamicStep> steps;
  int64_t skipped = 0;
  int final_scale_log2 = 0;
};

StaticScale recommend_static_scale(const std::vector<StepGradients>& steps, const LossScaleOptions& options);
DynamicScale simulate_dynamic_scale(const std::vector<StepGradients>& steps, const LossScaleOptions& options);

}  // namespace mpa::tensors
