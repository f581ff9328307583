// How a tensor's reference values fit a target format: values beyond its largest finite value, nonzero
// values that round to zero, values that land in the subnormal range, and headroom in bits.
// Classification uses the format's round-to-nearest-even boundaries (exact for every IEEE-like grid):
// |x| <= min_subnormal/2 rounds to zero; |x| < min_normal - min_subnormal/2 stays subnormal.
#pragma once
#include "probes/probe_common.h"
#include "tensor/formats.h"

namespace mpa::probes {

struct FormatFit {
  // The format's boundaries (floats, exactly) and the per-tensor scale of FP8 recipes, which store x as
  // round(x / scale) * scale: a value is classified by |x| / scale in float, the quotient that rounding sees
  // (round_to_format_scaled), so counts agree with what storage does, the tensor's absmax included.
  struct Bounds : kernels::FitBounds {
    explicit Bounds(Format f, double scale = 1)
        : kernels::FitBounds{format_traits(f).max_finite, format_traits(f).min_subnormal / 2,
                             format_traits(f).min_normal - format_traits(f).min_subnormal / 2,
                             static_cast<float>(scale)} {}
  };
  using Chunk = kernels::FitChunk;
  int64_t overflow = 0, flush_to_zero = 0, subnormal = 0, nonzero = 0;
  // Flushed values that matter: at least absmax * 2^-(mantissa bits + 1) of their tensor (per sample), so
  // losing them costs more than rounding the tensor's largest value already does. Verdicts use these;
  // a BatchNorm mean of 1e-9 beside means of 0.5 flushing to zero is harmless.
  int64_t significant_flush = 0;
  void absorb(const Chunk& c) {
    overflow += c.overflow;
    flush_to_zero += c.flush_to_zero;
    subnormal += c.subnormal;
    nonzero += c.nonzero;
  }
  void merge(const FormatFit& o) {
    absorb(Chunk{o.overflow, o.flush_to_zero, o.subnormal, o.nonzero, 0});
    significant_flush += o.significant_flush;
  }
  double significant_flush_fraction() const {
    return nonzero ? static_cast<double>(significant_flush) / static_cast<double>(nonzero) : 0;
  }
  // Counts the significant flushes of `t` given its absmax (a second pass, run only when something flushed).
  static int64_t count_significant_flushes(const Tensor& t, Format f, double absmax, double scale = 1);
  // The smallest flushed magnitude that counts as significant in a tensor of this absmax.
  static double significant_flush_threshold(Format f, double absmax);
  // Whether a flushed value of a tensor of this absmax can be significant at all. Unscaled, a flushed value
  // is at most the flush limit, so none is where the threshold lies above it: every tensor whose absmax is
  // above the format's smallest normal, nearly all of them, which then need no second pass.
  static bool flushes_can_matter(Format f, double absmax, double scale = 1) {
    return scale != 1 || significant_flush_threshold(f, absmax) <= Bounds(f).flush_limit;
  }
  // The same count over elements [begin, end), for passes that fuse several formats per chunk.
  static int64_t significant_flushes_in(const Tensor& t, int64_t begin, int64_t end, double relevant,
                                        const Bounds& bounds);
  // log2(max finite / absmax): bits of range left above the largest value (negative = overflow).
  static double headroom_bits(Format f, double absmax) {
    return absmax > 0 ? std::log2(format_traits(f).max_finite / absmax) : std::nan("");
  }
  // Counts of a whole tensor in one call (weights are checked once, not per sample; also the second pass
  // for scaled FP8 targets, whose scale needs the absmax first).
  static FormatFit of(const Tensor& t, Format f, double scale = 1);
  json to_json() const {
    return {{"overflow", overflow},   {"flush_to_zero", flush_to_zero}, {"significant_flush", significant_flush},
            {"subnormal", subnormal}, {"nonzero", nonzero}};
  }
  static FormatFit from_json(const json& j) {
    FormatFit f;
    f.overflow = j.at("overflow");
    f.flush_to_zero = j.at("flush_to_zero");
    f.significant_flush = j.at("significant_flush");
    f.subnormal = j.at("subnormal");
    f.nonzero = j.at("nonzero");
    return f;
  }
};

}  // namespace mpa::probes
