#include "tensors/loss_scale.h"

#include <algorithm>
#include <cstdio>

namespace mpa::tensors {

namespace {

std::string gradient_id(const StepGradients& step, const GradientFigures& g) { return step.step + "/" + g.name; }

// Why `g` overflows at 2^scale_log2, or nothing when it does not.
std::optional<std::string> overflow_reason(const GradientFigures& g, int scale_log2, Format format) {
  if (g.nonfinite > 0) return g.name + ": " + std::to_string(g.nonfinite) + " NaN/Inf";
  const double scaled = std::ldexp(g.absmax, scale_log2), max_finite = format_traits(format).max_finite;
  if (!(scaled > max_finite)) return std::nullopt;
  char text[160];
  std::snprintf(text, sizeof text, ": absmax %.6g x 2^%d = %.6g > %.6g", g.absmax, scale_log2, scaled, max_finite);
  return g.name + text;
}

double fraction(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : NAN;
}

}  // namespace

StaticScale recommend_static_scale(const std::vector<StepGradients>& steps, const LossScaleOptions& options) {
  StaticScale out;
  MagnitudeExponents all;
  double absmax = 0;
  std::optional<int> lo, hi;
  bool lo_unbounded = true;
  for (const StepGradients& step : steps) {
    all.merge(step.magnitudes);
    for (const GradientFigures& g : step.gradients) {
      if (g.nonfinite > 0) {
        out.nonfinite_gradients.push_back(gradient_id(step, g));
        continue;
      }
      if (!g.window.hi_log2) continue;  // no nonzero value: safe at every scale
      absmax = std::max(absmax, g.absmax);
      if (!hi || *g.window.hi_log2 < *hi) {
        hi = g.window.hi_log2;
        out.limited_by = gradient_id(step, g);
      }
      if (g.window.lo_log2) {
        lo_unbounded = false;
        lo = std::max(lo.value_or(*g.window.lo_log2), *g.window.lo_log2);
      }
    }
  }
  if (!hi) {
    out.reason = out.nonfinite_gradients.empty() ? "no gradient holds a nonzero finite value"
                                                 : "every gradient with nonzero values holds NaN/Inf";
    out.window.reason = out.reason;
    out.window.empty = !out.nonfinite_gradients.empty();
    return out;
  }
  out.scale_log2 = hi;
  out.headroom_bits = std::log2(format_traits(options.format).max_finite / std::ldexp(absmax, *hi));
  out.flush_fraction = fraction(flushed_at_scale(all, options.format, *hi), all.total());
  out.window.hi_log2 = hi;
  out.window.flush_fraction_at_hi = out.flush_fraction;
  if (!lo_unbounded) out.window.lo_log2 = lo;
  if (lo && *lo > *hi) {
    out.window.empty = true;
    out.window.reason = "2^" + std::to_string(*hi) + " overflows no gradient, but 2^" + std::to_string(*lo) +
                        " is needed to keep every gradient's flushes within the limit";
  }
  return out;
}

DynamicScale simulate_dynamic_scale(const std::vector<StepGradients>& steps, const LossScaleOptions& options) {
  require(options.growth_interval >= 1, "--growth-interval must be at least 1");
  require(options.hysteresis >= 1, "--hysteresis must be at least 1");
  DynamicScale out;
  int scale_log2 = options.initial_log2;
  int64_t clean_in_a_row = 0;
  int overflows_allowed = options.hysteresis;  // DeepSpeed's cur_hysteresis
  for (const StepGradients& step : steps) {
    DynamicStep record;
    record.step = step.step;
    record.scale_log2 = scale_log2;
    record.flush_fraction =
        fraction(flushed_at_scale(step.magnitudes, options.format, scale_log2), step.magnitudes.total());
    for (const GradientFigures& g : step.gradients)
      if (const auto reason = overflow_reason(g, scale_log2, options.format)) {
        if (record.overflowing.empty()) record.reason = *reason;
        record.overflowing.push_back(g.name);
      }
    if (record.overflowing.size() > 1)
      record.reason += " (and " + std::to_string(record.overflowing.size() - 1) + " more)";
    record.skipped = !record.overflowing.empty();
    if (record.skipped) {
      ++out.skipped;
      clean_in_a_row = 0;
      if (overflows_allowed > 1)
        --overflows_allowed;
      else
        scale_log2 += options.backoff_log2;
    } else if (++clean_in_a_row == options.growth_interval) {
      scale_log2 += options.growth_log2;
      clean_in_a_row = 0;
      overflows_allowed = options.hysteresis;
    }
    record.next_scale_log2 = scale_log2;
    out.steps.push_back(std::move(record));
  }
  out.final_scale_log2 = scale_log2;
  return out;
}

}  // namespace mpa::tensors
