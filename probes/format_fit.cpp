#include "probes/format_fit.h"

#include "probes/fast_paths.h"

namespace mpa::probes {

FormatFit FormatFit::of(const Tensor& t, Format f, double scale) {
  const Bounds bounds(f, scale);
  FormatFit fit;
  chunked<Chunk>(
      t.numel(),
      [&](int64_t begin, int64_t end) {
        Chunk c;
        if (t.dtype() == DType::Float32 && fast::all_finite(t.data<float>() + begin, end - begin))
          fast::format_fit(t.data<float>() + begin, end - begin, bounds, c);
        else
          for_each_value(t, begin, end, [&](double x, int64_t) { c.add(x, bounds); });
        return c;
      },
      [&](const Chunk& c) { fit.absorb(c); });
  if (fit.flush_to_zero > 0) {
    double absmax = 0;
    chunked<double>(
        t.numel(),
        [&](int64_t begin, int64_t end) {
          RangeProbe::Chunk range;
          if (t.dtype() == DType::Float32) {
            fast::range(t.data<float>() + begin, end - begin, range);
            if (std::isfinite(range.sum_sq)) return std::max(std::fabs(range.min), std::fabs(range.max));
          }
          double m = 0;
          for_each_value(t, begin, end, [&](double x, int64_t) {
            if (std::isfinite(x)) m = std::max(m, std::fabs(x));
          });
          return m;
        },
        [&](double m) { absmax = std::max(absmax, m); });
    fit.significant_flush = count_significant_flushes(t, f, absmax, scale);
  }
  return fit;
}

double FormatFit::significant_flush_threshold(Format f, double absmax) {
  return std::ldexp(absmax, -(format_traits(f).mantissa_bits + 1));
}

int64_t FormatFit::significant_flushes_in(const Tensor& t, int64_t begin, int64_t end, double relevant,
                                          const Bounds& bounds) {
  if (t.dtype() == DType::Float32 && fast::all_finite(t.data<float>() + begin, end - begin))
    return fast::count_significant_flushes(t.data<float>() + begin, end - begin, relevant, bounds);
  int64_t c = 0;
  for_each_value(t, begin, end, [&](double x, int64_t) {
    const double a = std::fabs(x);
    c += a > 0 && a >= relevant && bounds.in_format_units(a) <= bounds.flush_limit;
  });
  return c;
}

int64_t FormatFit::count_significant_flushes(const Tensor& t, Format f, double absmax, double scale) {
  const Bounds bounds(f, scale);
  const double relevant = significant_flush_threshold(f, absmax);
  int64_t count = 0;
  chunked<int64_t>(
      t.numel(), [&](int64_t begin, int64_t end) { return significant_flushes_in(t, begin, end, relevant, bounds); },
      [&](int64_t c) { count += c; });
  return count;
}

}  // namespace mpa::probes
