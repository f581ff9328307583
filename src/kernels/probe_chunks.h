// The probes' per-chunk statistics, element by element: what the host's probes (probes/) fold into a
// tensor's figures, and what a device computes where its tensors are, so that only these few hundred bytes
// per chunk of values travel (../shared/docs/backends.md §4). One source for both: every `add` here is the
// one the host's general path runs, and `merge` joins two partial chunks (a device's threads); counts,
// extremes and histograms do not depend on the order of either, sums associate differently.
#pragma once
#include <math.h>

#include <cstdint>
#include <cstring>

#include "tensor/hd.h"

namespace mpa::kernels {

// The binary exponent of a finite nonzero |x| (ilogb without the libm call: this runs per element).
MPA_HD int exponent_of(double magnitude) {
  uint64_t bits;
  memcpy(&bits, &magnitude, sizeof bits);
  const int field = static_cast<int>((bits >> 52) & 0x7FF);
  return field ? field - 1023 : ::ilogb(magnitude);  // subnormal doubles: rare, take the slow path
}

// 2^e for e in the normal double range, built from its bits.
MPA_HD double power_of_two(int e) {
  const uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
  double out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

// A magnitude in units of a per-tensor scale (FP8 recipes store x as round(x / scale) * scale): the float
// quotient that round_to_format_scaled rounds; the magnitude itself when unscaled.
MPA_HD double in_scaled_units(double magnitude, float scale) {
  return scale == 1.f ? magnitude : static_cast<double>(static_cast<float>(magnitude) / scale);
}

MPA_HD bool is_nan(double x) { return x != x; }
MPA_HD bool is_inf(double x) { return x == INFINITY || x == -INFINITY; }
MPA_HD bool is_finite(double x) { return !is_nan(x) && !is_inf(x); }
// std::min/std::max's choice (the first argument unless the second is strictly beyond it).
MPA_HD double lesser(double a, double b) { return b < a ? b : a; }
MPA_HD double greater(double a, double b) { return a < b ? b : a; }

// Count, extremes and sums of a tensor's values (probes/range_probe.h).
struct RangeChunk {
  int64_t count = 0, finite = 0, zeros = 0, nan = 0, pos_inf = 0, neg_inf = 0;
  double min = INFINITY, max = -INFINITY, sum = 0, sum_sq = 0;
  MPA_HD void add(double x) {
    ++count;
    if (is_nan(x)) return void(++nan);
    if (is_inf(x)) return void(x > 0 ? ++pos_inf : ++neg_inf);
    ++finite;
    zeros += x == 0;
    min = lesser(min, x);
    max = greater(max, x);
    sum += x;
    sum_sq += x * x;
  }
  MPA_HD void merge(const RangeChunk& o) {
    count += o.count, finite += o.finite, zeros += o.zeros, nan += o.nan, pos_inf += o.pos_inf, neg_inf += o.neg_inf;
    min = lesser(min, o.min);
    max = greater(max, o.max);
    sum += o.sum;
    sum_sq += o.sum_sq;
  }
  // The largest finite magnitude, once a finite value was added.
  MPA_HD double absmax() const { return greater(fabs(min), fabs(max)); }
};

// Exponent histogram bins (probes/exp_histogram.h gives the layout).
struct HistogramBins {
  static constexpr int kMinExp = -40, kMaxExp = 40;
  static constexpr int kBins = (kMaxExp - kMinExp + 1) + 5;
  static constexpr int kZero = 0, kBelow = 1, kFirstPow = 2, kAbove = kFirstPow + (kMaxExp - kMinExp + 1),
                       kInf = kAbove + 1, kNan = kInf + 1;
  MPA_HD static int bin_of(double x) {
    if (is_nan(x)) return kNan;
    if (is_inf(x)) return kInf;
    if (x == 0) return kZero;
    const int e = exponent_of(fabs(x));
    if (e < kMinExp) return kBelow;
    if (e > kMaxExp) return kAbove;
    return kFirstPow + e - kMinExp;
  }
};

struct HistogramChunk {
  int64_t counts[HistogramBins::kBins] = {};
  MPA_HD void add(double x) { ++counts[HistogramBins::bin_of(x)]; }
  MPA_HD void merge(const HistogramChunk& o) {
    for (int i = 0; i < HistogramBins::kBins; ++i) counts[i] += o.counts[i];
  }
};

// A format's boundaries for the fit counts (probes/format_fit.h), with the per-tensor scale of FP8 recipes,
// and the magnitude from which a flushed value is significant (0: not counted here).
struct FitBounds {
  double max_finite, flush_limit, normal_limit;
  float scale;
  double significant = 0;
  MPA_HD double in_format_units(double magnitude) const { return in_scaled_units(magnitude, scale); }
};

struct FitChunk {
  int64_t overflow = 0, flush_to_zero = 0, subnormal = 0, nonzero = 0;
  int64_t significant_flush = 0;  // only where the bounds name a significance threshold
  MPA_HD void add(double x, const FitBounds& b) {
    const double magnitude = fabs(x);
    const double a = b.in_format_units(magnitude);
    if (!(a > 0) || is_inf(magnitude)) return;  // zero, NaN and Inf are counted by the range probe
    ++nonzero;
    if (a > b.max_finite)
      ++overflow;
    else if (a <= b.flush_limit) {
      ++flush_to_zero;
      significant_flush += b.significant > 0 && magnitude >= b.significant;
    } else if (a < b.normal_limit)
      ++subnormal;
  }
  MPA_HD void merge(const FitChunk& o) {
    overflow += o.overflow, flush_to_zero += o.flush_to_zero, subnormal += o.subnormal, nonzero += o.nonzero;
    significant_flush += o.significant_flush;
  }
};

// What a divergence measures against (probes/divergence.h, Divergence::Params).
struct DivergenceParams {
  double atol, rtol, rel_floor;
  int min_exponent, mantissa_bits;
  float scale = 1;
};

struct DivergenceChunk {
  int64_t compared = 0, ref_finite = 0, nan = 0, inf = 0, mismatches = 0;
  double max_abs = 0, max_rel = 0, max_ulp = 0;
  double sum_abs = 0, sum_sq_err = 0, sum_ref_sq = 0, sum_tgt_sq = 0, sum_ref_tgt = 0, sum_ulp = 0;
  MPA_HD void add(double r, double t, const DivergenceParams& p) {
    if (!is_finite(r)) return;
    ++ref_finite;
    if (is_nan(t)) return void(++nan);
    if (is_inf(t)) return void(++inf);
    ++compared;
    const double e = fabs(t - r), a = fabs(r);
    max_abs = greater(max_abs, e);
    // Times the reciprocal, as the host's vector kernels compute it (one division per element for all runs).
    max_rel = greater(max_rel, e * (1.0 / greater(a, p.rel_floor)));
    mismatches += e > p.atol + p.rtol * a;
    // The format's spacing at |r| is 2^(max(exponent, min_exponent) - mantissa_bits) (times the scale).
    const double units = in_scaled_units(a, p.scale);
    const int exponent =
        units > 0 ? (exponent_of(units) > p.min_exponent ? exponent_of(units) : p.min_exponent) : p.min_exponent;
    const double ulp = e * power_of_two(p.mantissa_bits - exponent) / p.scale;
    max_ulp = greater(max_ulp, ulp);
    sum_ulp += ulp;
    sum_abs += e;
    sum_sq_err += e * e;
    sum_ref_sq += r * r;
    sum_tgt_sq += t * t;
    sum_ref_tgt += r * t;
  }
  MPA_HD void merge(const DivergenceChunk& o) {
    compared += o.compared, ref_finite += o.ref_finite, nan += o.nan, inf += o.inf, mismatches += o.mismatches;
    max_abs = greater(max_abs, o.max_abs);
    max_rel = greater(max_rel, o.max_rel);
    max_ulp = greater(max_ulp, o.max_ulp);
    sum_abs += o.sum_abs, sum_sq_err += o.sum_sq_err, sum_ref_sq += o.sum_ref_sq, sum_tgt_sq += o.sum_tgt_sq;
    sum_ref_tgt += o.sum_ref_tgt, sum_ulp += o.sum_ulp;
  }
};

}  // namespace mpa::kernels
