#include "probes/format_fit.h"

#include "probes/fast_paths.h"

namespace mpa::probes {

FormatFit FormatFit::of(const Tensor& t, Format f, double scale) {
  const Bounds bounds(f, scale);
  FormatFit fit;
  // The counts and each chunk's absmax while the chunk is in cache (its absmax also tells finiteness).
  double absmax = 0;
  chunked<std::pair<Chunk, double>>(
      t.numel(),
      [&](int64_t begin, int64_t end) {
        Chunk c;
        if (t.dtype() == DType::Float32) {
          const float chunk_absmax = fast::absmax(t.data<float>() + begin, end - begin);
          if (std::isfinite(chunk_absmax)) {
            fast::format_fit(t.data<float>() + begin, end - begin, bounds, c);
            return std::pair(c, static_cast<double>(chunk_absmax));
          }
        }
        double m = 0;
        for_each_value(t, begin, end, [&](double x, int64_t) {
          c.add(x, bounds);
          if (std::isfinite(x)) m = std::max(m, std::fabs(x));
        });
        return std::pair(c, m);
      },
      [&](const std::pair<Chunk, double>& c) {
        fit.absorb(c.first);
        absmax = std::max(absmax, c.second);
      });
  if (fit.flush_to_zero > 0 && flushes_can_matter(f, absmax, scale))
    fit.significant_flush = count_significant_flushes(t, f, absmax, scale);
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
