// How a tensor's reference values fit a target format: values beyond its largest finite value, nonzero
// values that round to zero, values that land in the subnormal range, and headroom in bits.
// Classification uses the format's round-to-nearest-even boundaries (exact for every IEEE-like grid):
// |x| <= min_subnormal/2 rounds to zero; |x| < min_normal - min_subnormal/2 stays subnormal.
#pragma once
#include "probes/probe_common.h"
#include "tensor/formats.h"

namespace mpa::probes {

struct FormatFit {
  struct Bounds {
    double max_finite, flush_limit, normal_limit;
    explicit Bounds(Format f)
        : max_finite(format_traits(f).max_finite),
          flush_limit(format_traits(f).min_subnormal / 2),
          normal_limit(format_traits(f).min_normal - format_traits(f).min_subnormal / 2) {}
  };
  struct Chunk {
    int64_t overflow = 0, flush_to_zero = 0, subnormal = 0, nonzero = 0;
    void add(double x, const Bounds& b) {
      const double a = std::fabs(x);
      if (!(a > 0) || std::isinf(a)) return;  // zero, NaN and Inf are counted by the range probe
      ++nonzero;
      if (a > b.max_finite) ++overflow;
      else if (a <= b.flush_limit) ++flush_to_zero;
      else if (a < b.normal_limit) ++subnormal;
    }
  };
  int64_t overflow = 0, flush_to_zero = 0, subnormal = 0, nonzero = 0;
  void absorb(const Chunk& c) {
    overflow += c.overflow;
    flush_to_zero += c.flush_to_zero;
    subnormal += c.subnormal;
    nonzero += c.nonzero;
  }
  void merge(const FormatFit& o) { absorb(Chunk{o.overflow, o.flush_to_zero, o.subnormal, o.nonzero}); }
  double flush_fraction() const { return nonzero ? static_cast<double>(flush_to_zero) / static_cast<double>(nonzero) : 0; }
  // log2(max finite / absmax): bits of range left above the largest value (negative = overflow).
  static double headroom_bits(Format f, double absmax) {
    return absmax > 0 ? std::log2(format_traits(f).max_finite / absmax) : std::nan("");
  }
  // Counts of a whole tensor in one call (weights are checked once, not per sample).
  static FormatFit of(const Tensor& t, Format f);
  json to_json() const {
    return {{"overflow", overflow}, {"flush_to_zero", flush_to_zero}, {"subnormal", subnormal}, {"nonzero", nonzero}};
  }
  static FormatFit from_json(const json& j) {
    FormatFit f;
    f.overflow = j.at("overflow");
    f.flush_to_zero = j.at("flush_to_zero");
    f.subnormal = j.at("subnormal");
    f.nonzero = j.at("nonzero");
    return f;
  }
};

}  // namespace mpa::probes
