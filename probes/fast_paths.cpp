#include "probes/fast_paths.h"

#include <bit>
#include <cmath>

// Reductions may reassociate and assume finite values (the callers check: so they vectorise), and each kernel is cloned for AVX-512 and AVX2 with the
// best clone picked at load time; the default clone serves any x86-64.
#define MPA_VECTOR_REDUCTION                                                              \
  __attribute__((optimize("associative-math,no-signed-zeros,no-trapping-math,finite-math-only"),          \
                 target_clones("avx512f", "avx2", "default")))
#define MPA_VECTOR_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))

namespace mpa::probes::fast {

// __builtin_bit_cast, not helper functions: GCC does not inline across differing optimize attributes.

MPA_VECTOR_LOOP bool all_finite(const float* x, int64_t n) {
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= static_cast<uint32_t>((__builtin_bit_cast(uint32_t, x[i]) & 0x7F800000u) == 0x7F800000u);
  return bad == 0;
}

MPA_VECTOR_REDUCTION void divergence(const float* r, const float* t, int64_t n, const Divergence::Params& p,
                                     Divergence::Chunk& c) {
  // One division per element, not two: the format's spacing at |r| is a power of two, so err/spacing is
  // err times the spacing's exact reciprocal, built from the exponent bits.
  const uint64_t min_normal_bits = __builtin_bit_cast(uint64_t, std::ldexp(1.0, p.min_exponent));
  const double two_m = std::ldexp(1.0, p.mantissa_bits);
  double max_abs = c.max_abs, max_rel = c.max_rel, max_ulp = c.max_ulp;
  double sum_abs = 0, sum_sq = 0, sum_rr = 0, sum_tt = 0, sum_rt = 0, sum_ulp = 0;
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double rv = r[i], tv = t[i];
    const double e = rv > tv ? rv - tv : tv - rv;
    const double a = rv < 0 ? -rv : rv;
    max_abs = e > max_abs ? e : max_abs;
    const double denom = a > p.rel_floor ? a : p.rel_floor;
    const double rel = e / denom;
    max_rel = rel > max_rel ? rel : max_rel;
    mismatches += e > p.atol + p.rtol * a;
    // 2^-E for the binade 2^E of max(|r|, min_normal): exponent field 2046 - (E + 1023).
    const uint64_t binade_bits = __builtin_bit_cast(uint64_t, a) & 0x7FF0000000000000ull;
    const uint64_t spacing_bits = binade_bits > min_normal_bits ? binade_bits : min_normal_bits;
    const double ulp = e * two_m * __builtin_bit_cast(double, (2046ull << 52) - spacing_bits);
    max_ulp = ulp > max_ulp ? ulp : max_ulp;
    sum_abs += e;
    sum_sq += e * e;
    sum_rr += rv * rv;
    sum_tt += tv * tv;
    sum_rt += rv * tv;
    sum_ulp += ulp;
  }
  c.compared += n;
  c.ref_finite += n;
  c.mismatches += mismatches;
  c.max_abs = max_abs;
  c.max_rel = max_rel;
  c.max_ulp = max_ulp;
  c.sum_abs += sum_abs;
  c.sum_sq_err += sum_sq;
  c.sum_ref_sq += sum_rr;
  c.sum_tgt_sq += sum_tt;
  c.sum_ref_tgt += sum_rt;
  c.sum_ulp += sum_ulp;
}

MPA_VECTOR_REDUCTION void range(const float* x, int64_t n, RangeProbe::Chunk& c) {
  double lo = c.min, hi = c.max, sum = 0, sum_sq = 0;
  int64_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
    sum_sq += v * v;
    zeros += v == 0;
  }
  c.count += n;
  c.finite += n;
  c.zeros += zeros;
  c.min = lo;
  c.max = hi;
  c.sum += sum;
  c.sum_sq += sum_sq;
}

MPA_VECTOR_LOOP int64_t count_magnitudes_within(const float* x, int64_t n, double lo, double hi) {
  // Float bounds that classify every float as the double bounds do: the smallest float >= lo, the
  // largest float <= hi.
  float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
  if (static_cast<double>(flo) < lo) flo = std::nextafter(flo, INFINITY);
  if (static_cast<double>(fhi) > hi) fhi = std::nextafter(fhi, -INFINITY);
  int32_t count = 0;  // a chunk holds fewer than 2^31 values
  for (int64_t i = 0; i < n; ++i) {
    const float a = __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu);
    count += (a > 0.f) & (a >= flo) & (a <= fhi);
  }
  return count;
}

MPA_VECTOR_LOOP void format_fit(const float* x, int64_t n, const FormatFit::Bounds& b, FormatFit::Chunk& c) {
  // float bounds and 32-bit counters (a chunk holds fewer than 2^31 values) keep the loop in vector lanes;
  // bounds that are not floats round to the float that classifies every float the same way.
  const float max_finite = static_cast<float>(b.max_finite), flush_limit = static_cast<float>(b.flush_limit),
              normal_limit = static_cast<float>(b.normal_limit);
  int32_t overflow = 0, flushed = 0, subnormal = 0, nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu);
    nonzero += a > 0.f;
    overflow += a > max_finite;
    flushed += (a > 0.f) & (a <= flush_limit);
    subnormal += (a > flush_limit) & (a < normal_limit);
  }
  c.overflow += overflow;
  c.flush_to_zero += flushed;
  c.subnormal += subnormal;
  c.nonzero += nonzero;
}

MPA_VECTOR_LOOP void histogram(const float* x, int64_t n, ExpHistogram::Chunk& h) {
  // Count the 256 exponent fields first, in four interleaved tables so that runs of equal exponents do not
  // serialise on one counter, then fold them into bins.
  uint32_t tables[4][256] = {};
  int64_t zeros = 0, i = 0;
  for (; i + 4 <= n; i += 4)
    for (int lane = 0; lane < 4; ++lane) {
      const uint32_t u = __builtin_bit_cast(uint32_t, x[i + lane]) & 0x7FFFFFFFu;
      ++tables[lane][u >> 23];
      zeros += u == 0;
    }
  for (; i < n; ++i) {
    const uint32_t u = __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu;
    ++tables[0][u >> 23];
    zeros += u == 0;
  }
  uint32_t fields[256];
  for (int f = 0; f < 256; ++f) fields[f] = tables[0][f] + tables[1][f] + tables[2][f] + tables[3][f];
  h.counts[ExpHistogram::kZero] += zeros;
  h.counts[ExpHistogram::kBelow] += fields[0] - zeros;  // float subnormals lie below 2^-126
  for (int field = 1; field < 255; ++field) {
    const int e = field - 127;
    const int bin = e < ExpHistogram::kMinExp   ? ExpHistogram::kBelow
                    : e > ExpHistogram::kMaxExp ? ExpHistogram::kAbove
                                                : ExpHistogram::kFirstPow + e - ExpHistogram::kMinExp;
    h.counts[static_cast<size_t>(bin)] += fields[field];
  }
}

}  // namespace mpa::probes::fast
