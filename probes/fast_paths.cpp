#include "probes/fast_paths.h"

// GCC 12 warns inside the AVX-512 intrinsics' own code (their "undefined" pass-through operands) once
// they are inlined; the header's lines are where those warnings point, so they are silenced there only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC warning; clang (the fuzz build) knows no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>
#include <utility>

#include "common/compiler.h"

// Reductions may reassociate and assume finite values (the callers check: so they vectorise), and each kernel is cloned for AVX-512 and AVX2 with the
// best clone picked at load time; the default clone serves any x86-64.
#define MPA_VECTOR_REDUCTION                                                             \
  MPA_GCC_OPTIMIZE("associative-math,no-signed-zeros,no-trapping-math,finite-math-only") \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#define MPA_VECTOR_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))

namespace mpa::probes::fast {

// __builtin_bit_cast, not helper functions: GCC does not inline across differing optimize attributes.

MPA_VECTOR_LOOP bool all_finite(const float* x, int64_t n) {
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= static_cast<uint32_t>((__builtin_bit_cast(uint32_t, x[i]) & 0x7F800000u) == 0x7F800000u);
  return bad == 0;
}

MPA_VECTOR_LOOP float absmax(const float* x, int64_t n) {
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t magnitude = __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu;
    largest = magnitude > largest ? magnitude : largest;
  }
  return __builtin_bit_cast(float, largest);
}

namespace {

// Divergences of Count targets from one reference: the terms that depend on the reference alone (its
// magnitude, the reciprocal of the relative-error floor, the mismatch tolerance, the format's spacing, its
// square) are computed once per element for all targets.
template <int Count>
__attribute__((always_inline))
MPA_GCC_OPTIMIZE("associative-math,no-signed-zeros,no-trapping-math,finite-math-only") inline void divergences_of(
    const float* r, const float* const* targets, int64_t n, const Divergence::Params& p, Divergence::Chunk* chunks) {
  // err/spacing is err times the spacing's exact reciprocal, a power of two built from the exponent bits.
  const uint64_t min_normal_bits = __builtin_bit_cast(uint64_t, std::ldexp(1.0, p.min_exponent));
  const double two_m = std::ldexp(1.0, p.mantissa_bits);
  const float* t[Count];
  double max_abs[Count], max_rel[Count], max_ulp[Count];
  double sum_abs[Count] = {}, sum_sq[Count] = {}, sum_tt[Count] = {}, sum_rt[Count] = {}, sum_ulp[Count] = {};
  int64_t mismatches[Count] = {};
  for (int j = 0; j < Count; ++j) {
    t[j] = targets[j];
    max_abs[j] = chunks[j].max_abs;
    max_rel[j] = chunks[j].max_rel;
    max_ulp[j] = chunks[j].max_ulp;
  }
  double sum_rr = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double rv = r[i];
    const double a = rv < 0 ? -rv : rv;
    const double per_rel = 1.0 / (a > p.rel_floor ? a : p.rel_floor);
    const double tolerance = p.atol + p.rtol * a;
    // 2^-E for the binade 2^E of max(|r|, min_normal): exponent field 2046 - (E + 1023).
    const uint64_t binade_bits = __builtin_bit_cast(uint64_t, a) & 0x7FF0000000000000ull;
    const uint64_t spacing_bits = binade_bits > min_normal_bits ? binade_bits : min_normal_bits;
    const double per_ulp = two_m * __builtin_bit_cast(double, (2046ull << 52) - spacing_bits);
    sum_rr += rv * rv;
#pragma GCC unroll 4
    for (int j = 0; j < Count; ++j) {
      const double tv = t[j][i];
      const double e = rv > tv ? rv - tv : tv - rv;
      max_abs[j] = e > max_abs[j] ? e : max_abs[j];
      const double rel = e * per_rel;
      max_rel[j] = rel > max_rel[j] ? rel : max_rel[j];
      mismatches[j] += e > tolerance;
      const double ulp = e * per_ulp;
      max_ulp[j] = ulp > max_ulp[j] ? ulp : max_ulp[j];
      sum_abs[j] += e;
      sum_sq[j] += e * e;
      sum_tt[j] += tv * tv;
      sum_rt[j] += rv * tv;
      sum_ulp[j] += ulp;
    }
  }
  for (int j = 0; j < Count; ++j) {
    Divergence::Chunk& c = chunks[j];
    c.compared += n;
    c.ref_finite += n;
    c.mismatches += mismatches[j];
    c.max_abs = max_abs[j];
    c.max_rel = max_rel[j];
    c.max_ulp = max_ulp[j];
    c.sum_abs += sum_abs[j];
    c.sum_sq_err += sum_sq[j];
    c.sum_ref_sq += sum_rr;
    c.sum_tgt_sq += sum_tt[j];
    c.sum_ref_tgt += sum_rt[j];
    c.sum_ulp += sum_ulp[j];
  }
}

MPA_VECTOR_REDUCTION void divergences_portable(const float* r, const float* const* targets, int count, int64_t n,
                                               const Divergence::Params& p, Divergence::Chunk* chunks) {
  // Three targets at most per pass bound the accumulators the loop carries.
  for (; count >= 3; count -= 3, targets += 3, chunks += 3) divergences_of<3>(r, targets, n, p, chunks);
  if (count == 2) divergences_of<2>(r, targets, n, p, chunks);
  if (count == 1) divergences_of<1>(r, targets, n, p, chunks);
}

#define MPA_AVX512_DIVERGENCE __attribute__((target("avx512f,avx512dq,avx512vl,popcnt"), always_inline)) inline

// One target's accumulators in vector lanes.
struct DivergenceLanes {
  __m512d max_abs, max_rel, max_ulp, sum_abs, sum_sq, sum_tt, sum_rt, sum_ulp;
  int64_t mismatches;
};

MPA_AVX512_DIVERGENCE DivergenceLanes lanes_of(const Divergence::Chunk& c) {
  const __m512d zero = _mm512_setzero_pd();
  return {
      _mm512_set1_pd(c.max_abs), _mm512_set1_pd(c.max_rel), _mm512_set1_pd(c.max_ulp), zero, zero, zero, zero, zero, 0};
}

// The terms of eight reference values that every target shares.
struct ReferenceLanes {
  __mmask8 valid;
  __m512d value, per_rel, tolerance, per_ulp;
};

MPA_AVX512_DIVERGENCE void add_lanes(DivergenceLanes& d, const ReferenceLanes& ref, const float* t) {
  const __m512i magnitude = _mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll);
  const __m512d tv = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(ref.valid, t));
  const __m512d e = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(_mm512_sub_pd(tv, ref.value)), magnitude));
  d.max_abs = _mm512_max_pd(d.max_abs, e);
  d.max_rel = _mm512_max_pd(d.max_rel, _mm512_mul_pd(e, ref.per_rel));
  d.mismatches += __builtin_popcount(_mm512_cmp_pd_mask(e, ref.tolerance, _CMP_GT_OQ));
  const __m512d ulp = _mm512_mul_pd(e, ref.per_ulp);
  d.max_ulp = _mm512_max_pd(d.max_ulp, ulp);
  d.sum_ulp = _mm512_add_pd(d.sum_ulp, ulp);
  d.sum_abs = _mm512_add_pd(d.sum_abs, e);
  d.sum_sq = _mm512_fmadd_pd(e, e, d.sum_sq);
  d.sum_tt = _mm512_fmadd_pd(tv, tv, d.sum_tt);
  d.sum_rt = _mm512_fmadd_pd(ref.value, tv, d.sum_rt);
}

MPA_AVX512_DIVERGENCE void fold_lanes(const DivergenceLanes& d, double sum_rr, int64_t n, Divergence::Chunk& c) {
  c.compared += n;
  c.ref_finite += n;
  c.mismatches += d.mismatches;
  c.max_abs = _mm512_reduce_max_pd(d.max_abs);
  c.max_rel = _mm512_reduce_max_pd(d.max_rel);
  c.max_ulp = _mm512_reduce_max_pd(d.max_ulp);
  c.sum_abs += _mm512_reduce_add_pd(d.sum_abs);
  c.sum_sq_err += _mm512_reduce_add_pd(d.sum_sq);
  c.sum_ref_sq += sum_rr;
  c.sum_tgt_sq += _mm512_reduce_add_pd(d.sum_tt);
  c.sum_ref_tgt += _mm512_reduce_add_pd(d.sum_rt);
  c.sum_ulp += _mm512_reduce_add_pd(d.sum_ulp);
}

// The loop of divergences_of written out for AVX-512: eight values per step, each target's accumulators
// and the shared terms in the 32 vector registers (the compiler's version unrolls to sixteen values and
// spills), mismatches counted by popcount of the compare mask. The per-element arithmetic is the loop's,
// operation for operation, so extremes and counts are identical; sums associate differently. Targets'
// accumulators live in a tuple indexed by constants, which the compiler keeps in registers (an array of
// them it stores back every step).
template <size_t... J>
__attribute__((target("avx512f,avx512dq,avx512vl,popcnt"))) void divergences_avx512_of(
    std::index_sequence<J...>, const float* r, const float* const* targets, int64_t n, const Divergence::Params& p,
    Divergence::Chunk* chunks) {
  const __m512d floor = _mm512_set1_pd(p.rel_floor), atol = _mm512_set1_pd(p.atol), rtol = _mm512_set1_pd(p.rtol),
                one = _mm512_set1_pd(1.0), two_m = _mm512_set1_pd(std::ldexp(1.0, p.mantissa_bits));
  const __m512i magnitude = _mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll), exponent = _mm512_set1_epi64(0x7FF0000000000000ll),
                reciprocal_exponent = _mm512_set1_epi64(2046ll << 52),
                min_normal = _mm512_set1_epi64(__builtin_bit_cast(int64_t, std::ldexp(1.0, p.min_exponent)));
  std::tuple acc{lanes_of(chunks[J])...};
  __m512d sum_rr = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    ReferenceLanes ref;
    // The tail reads zeros, which add nothing: errors 0 (no mismatch: tolerance >= 0), sums + 0, maxima >= 0.
    ref.valid = n - i >= 8 ? __mmask8(0xFF) : static_cast<__mmask8>((1u << (n - i)) - 1);
    ref.value = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(ref.valid, r + i));
    const __m512d a = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(ref.value), magnitude));
    ref.per_rel = _mm512_div_pd(one, _mm512_max_pd(a, floor));
    ref.tolerance = _mm512_add_pd(atol, _mm512_mul_pd(rtol, a));
    const __m512i binade = _mm512_and_si512(_mm512_castpd_si512(a), exponent);
    ref.per_ulp = _mm512_mul_pd(
        two_m, _mm512_castsi512_pd(_mm512_sub_epi64(reciprocal_exponent, _mm512_max_epu64(binade, min_normal))));
    sum_rr = _mm512_fmadd_pd(ref.value, ref.value, sum_rr);
    (add_lanes(std::get<J>(acc), ref, targets[J] + i), ...);
  }
  const double rr = _mm512_reduce_add_pd(sum_rr);
  (fold_lanes(std::get<J>(acc), rr, n, chunks[J]), ...);
}

void divergences_avx512(const float* r, const float* const* targets, int count, int64_t n, const Divergence::Params& p,
                        Divergence::Chunk* chunks) {
  for (; count >= 3; count -= 3, targets += 3, chunks += 3)
    divergences_avx512_of(std::make_index_sequence<3>(), r, targets, n, p, chunks);
  if (count == 2) divergences_avx512_of(std::make_index_sequence<2>(), r, targets, n, p, chunks);
  if (count == 1) divergences_avx512_of(std::make_index_sequence<1>(), r, targets, n, p, chunks);
}

}  // namespace

void divergences(const float* r, const float* const* targets, int count, int64_t n, const Divergence::Params& p,
                 Divergence::Chunk* chunks) {
  static const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  (avx512 ? divergences_avx512 : divergences_portable)(r, targets, count, n, p, chunks);
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

namespace {

// The fit counts with magnitudes in format units: |x| / scale in float, as round_to_format_scaled divides
// (ToUnits is the identity for unscaled formats, so that loop stays free of divisions). The format's
// boundaries are floats exactly, so float comparisons classify as the double ones do.
template <class ToUnits>
__attribute__((always_inline)) inline void format_fit_in_units(const float* x, int64_t n, const FormatFit::Bounds& b,
                                                               FormatFit::Chunk& c, ToUnits to_units) {
  // 32-bit counters (a chunk holds fewer than 2^31 values) keep the loop in vector lanes.
  const float max_finite = static_cast<float>(b.max_finite), flush_limit = static_cast<float>(b.flush_limit),
              normal_limit = static_cast<float>(b.normal_limit);
  int32_t overflow = 0, flushed = 0, subnormal = 0, nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = to_units(__builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu));
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

}  // namespace

MPA_VECTOR_LOOP void format_fit(const float* x, int64_t n, const FormatFit::Bounds& b, FormatFit::Chunk& c) {
  const float scale = b.scale;
  if (scale == 1.f)
    format_fit_in_units(x, n, b, c, [](float a) { return a; });
  else
    format_fit_in_units(x, n, b, c, [scale](float a) { return a / scale; });
}

MPA_VECTOR_LOOP int64_t count_significant_flushes(const float* x, int64_t n, double relevant,
                                                  const FormatFit::Bounds& b) {
  float low = static_cast<float>(relevant);  // the smallest float >= relevant classifies floats as it does
  if (static_cast<double>(low) < relevant) low = std::nextafter(low, INFINITY);
  const float flush_limit = static_cast<float>(b.flush_limit), scale = b.scale;
  int32_t count = 0;  // a chunk holds fewer than 2^31 values
  for (int64_t i = 0; i < n; ++i) {
    const float a = __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu);
    count += (a > 0.f) & (a >= low) & (a / scale <= flush_limit);
  }
  return count;
}

namespace {

// Folds counts per float exponent field (field 0: nonzero subnormals only) and the zero count into bins.
void fold_exponent_fields(const uint64_t* fields, int64_t zeros, ExpHistogram::Chunk& h) {
  h.counts[ExpHistogram::kZero] += zeros;
  h.counts[ExpHistogram::kBelow] += static_cast<int64_t>(fields[0]);  // float subnormals lie below 2^-126
  for (int field = 1; field < 255; ++field) {
    const int e = field - 127;
    const int bin = e < ExpHistogram::kMinExp   ? ExpHistogram::kBelow
                    : e > ExpHistogram::kMaxExp ? ExpHistogram::kAbove
                                                : ExpHistogram::kFirstPow + e - ExpHistogram::kMinExp;
    h.counts[static_cast<size_t>(bin)] += static_cast<int64_t>(fields[field]);
  }
}

// Counts of the exponent fields of x[0, n) into fields[], zeros apart; scalar, for any x86-64.
void count_exponent_fields_scalar(const float* x, int64_t n, uint64_t* fields, int64_t& zeros) {
  // Four interleaved tables, so that runs of equal exponents do not serialise on one counter.
  uint32_t tables[4][256] = {};
  int64_t i = 0, zero_count = 0;
  for (; i + 4 <= n; i += 4)
    for (int lane = 0; lane < 4; ++lane) {
      const uint32_t u = __builtin_bit_cast(uint32_t, x[i + lane]) & 0x7FFFFFFFu;
      ++tables[lane][u >> 23];
      zero_count += u == 0;
    }
  for (; i < n; ++i) {
    const uint32_t u = __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu;
    ++tables[0][u >> 23];
    zero_count += u == 0;
  }
  for (int f = 0; f < 256; ++f) fields[f] += tables[0][f] + tables[1][f] + tables[2][f] + tables[3][f];
  fields[0] -= static_cast<uint64_t>(zero_count);
  zeros += zero_count;
}

// The same with AVX-512 (BW, VBMI), 64 values per step. Incrementing table entries costs about two cycles per
// value (memory round trips). Instead each step turns 64 values into exponent-field bytes, takes their
// offsets into the window of the 16 fields ending at the chunk's largest, and splits the 4 bits of those
// offsets into 64-bit masks: each field's count is then the popcount of an AND of four masks (or their
// complements), all in general registers. The few values below the window (besides zeros, counted
// apart) go through a table one by one.
// The window only sorts values between the fast and the one-by-one path, so counts are exact whatever it is.
__attribute__((target("avx512f,avx512bw,avx512vbmi,popcnt"))) void count_exponent_fields_avx512(
    const float* x, int64_t n, float absmax, uint64_t* fields, int64_t& zeros) {
  // Shifted left by one, a float's bits hold its exponent field in the top byte, without the sign.
  const int64_t whole = n / 64 * 64;
  const int top = static_cast<int>(__builtin_bit_cast(uint32_t, absmax) >> 23);
  const int low = std::max(1, top - 15);
  const __m512i low_field = _mm512_set1_epi8(static_cast<char>(low)), window = _mm512_set1_epi8(16);
  // Byte 3 of each 32-bit lane of two vectors, in order (the index's bit 6 picks the second vector).
  alignas(64) uint8_t top_bytes[64];
  for (int b = 0; b < 64; ++b) top_bytes[b] = static_cast<uint8_t>(b < 32 ? 4 * b + 3 : 4 * (b - 32) + 3);
  const __m512i top_byte_index = _mm512_load_si512(top_bytes);
  uint64_t window_counts[16] = {};
  // When most values lie below the window (an outlier, such as a -1e9 mask value, set the largest
  // exponent far above the rest), the table is faster than the one-by-one path: the first 1024 values tell.
  constexpr int64_t kTrial = 1024;
  int64_t i = 0, values_below = 0;
  for (; i < whole; i += 64) {
    if (i == kTrial && 4 * values_below > kTrial) break;
    __m512i u[4];
    uint64_t nonzero = 0;
    for (int j = 0; j < 4; ++j) {
      u[j] = _mm512_slli_epi32(_mm512_loadu_si512(x + i + 16 * j), 1);
      nonzero |= static_cast<uint64_t>(_mm512_test_epi32_mask(u[j], u[j])) << (16 * j);
    }
    const __m512i first = _mm512_permutex2var_epi8(u[0], top_byte_index, u[1]);
    const __m512i second = _mm512_permutex2var_epi8(u[2], top_byte_index, u[3]);
    const __m512i keys = _mm512_inserti64x4(first, _mm512_castsi512_si256(second), 1);
    zeros += 64 - __builtin_popcountll(nonzero);
    // Offsets below the window wrap around to 240 and up.
    const __m512i offsets = _mm512_sub_epi8(keys, low_field);
    const uint64_t in_window = _mm512_cmplt_epu8_mask(offsets, window) & nonzero;
    const uint64_t bit0 = _mm512_test_epi8_mask(offsets, _mm512_set1_epi8(1));
    const uint64_t bit1 = _mm512_test_epi8_mask(offsets, _mm512_set1_epi8(2));
    const uint64_t bit2 = _mm512_test_epi8_mask(offsets, _mm512_set1_epi8(4));
    const uint64_t bit3 = _mm512_test_epi8_mask(offsets, _mm512_set1_epi8(8));
    const uint64_t low_pairs[4] = {in_window & ~bit0 & ~bit1, in_window & bit0 & ~bit1, in_window & ~bit0 & bit1,
                                   in_window & bit0 & bit1};
    const uint64_t high_pairs[4] = {~bit2 & ~bit3, bit2 & ~bit3, ~bit2 & bit3, bit2 & bit3};
    for (int hi = 0; hi < 4; ++hi)
      for (int lo = 0; lo < 4; ++lo)
        window_counts[4 * hi + lo] += static_cast<uint64_t>(__builtin_popcountll(high_pairs[hi] & low_pairs[lo]));
    uint64_t below = ~in_window & nonzero;
    values_below += __builtin_popcountll(below);
    if (below) {
      alignas(64) uint8_t key_bytes[64];
      _mm512_store_si512(key_bytes, keys);
      for (; below; below &= below - 1) ++fields[key_bytes[__builtin_ctzll(below)]];
    }
  }
  for (int b = 0; b < 16; ++b) fields[low + b] += window_counts[b];
  if (i < n) count_exponent_fields_scalar(x + i, n - i, fields, zeros);
}

}  // namespace

void exponent_fields(const float* x, int64_t n, float absmax, uint64_t* fields, int64_t& zeros) {
  static const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
  if (avx512)
    count_exponent_fields_avx512(x, n, absmax, fields, zeros);
  else
    count_exponent_fields_scalar(x, n, fields, zeros);
}

MPA_VECTOR_LOOP bool any_power_of_two(const float* x, int64_t n) {
  uint32_t found = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = __builtin_bit_cast(uint32_t, x[i]) & 0x7FFFFFFFu;
    found |= static_cast<uint32_t>((u & 0x7FFFFFu) == 0 && u != 0);
  }
  return found != 0;
}

void histogram(const float* x, int64_t n, float absmax, ExpHistogram::Chunk& h) {
  uint64_t fields[256] = {};
  int64_t zeros = 0;
  exponent_fields(x, n, absmax, fields, zeros);
  fold_exponent_fields(fields, zeros, h);
}

void histogram(const float* x, int64_t n, ExpHistogram::Chunk& h) { histogram(x, n, absmax(x, n), h); }

}  // namespace mpa::probes::fast
