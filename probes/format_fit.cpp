#include "probes/format_fit.h"

namespace mpa::probes {

FormatFit FormatFit::of(const Tensor& t, Format f) {
  const Bounds bounds(f);
  FormatFit fit;
  chunked<Chunk>(
      t.numel(),
      [&](int64_t begin, int64_t end) {
        Chunk c;
        for_each_value(t, begin, end, [&](double x, int64_t) { c.add(x, bounds); });
        return c;
      },
      [&](const Chunk& c) { fit.absorb(c); });
  return fit;
}

}  // namespace mpa::probes
