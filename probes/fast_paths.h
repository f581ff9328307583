// Vectorisable per-chunk kernels for the common case: float32 tensors whose chunk holds only finite
// values. The probes run them instead of their per-element `add` when a chunk qualifies (one integer
// pass checks it, or the kernel's own sums of squares do: squares of floats cannot overflow a double, so
// those sums are finite exactly when every value is), and fall back to the general code for NaN/Inf and
// other element types. Results are
// deterministic (fixed chunks, fixed code) but sums may associate differently from the general path, which
// the associative-math attribute allows so the compiler can vectorise the reductions.
#pragma once
#include <cstdint>

#include "probes/divergence.h"
#include "probes/exp_histogram.h"
#include "probes/format_fit.h"
#include "probes/range_probe.h"

namespace mpa::probes::fast {

// True when no element of x[0, n) is NaN or Inf.
bool all_finite(const float* x, int64_t n);

// The largest |x| of x[0, n) (0 when n is 0); NaN or Inf when some x is not finite, as their magnitudes'
// bits order above every finite one's.
float absmax(const float* x, int64_t n);

// Divergence of each of `count` targets from r, accumulated into chunks[0, count); meaningful only when
// every chunk's sum_ref_sq + sum_tgt_sq comes out finite (all inputs finite), which the caller checks.
void divergences(const float* r, const float* const* targets, int count, int64_t n, const Divergence::Params& p,
                 Divergence::Chunk* chunks);

// Range statistics of x into c; meaningful only when c.sum_sq comes out finite, which the caller checks.
void range(const float* x, int64_t n, RangeProbe::Chunk& c);

// Format-fit counts of finite x into c.
void format_fit(const float* x, int64_t n, const FormatFit::Bounds& b, FormatFit::Chunk& c);

// Finite x that flush to zero in b (0 < |x| / b.scale <= b.flush_limit) and are at least `relevant`.
int64_t count_significant_flushes(const float* x, int64_t n, double relevant, const FormatFit::Bounds& b);

// Counts of finite x by float exponent field (0 holds the subnormals) into fields[256], zeros apart; absmax
// is their largest magnitude (fast::absmax, or a range pass's), which places the AVX-512 kernel's window.
void exponent_fields(const float* x, int64_t n, float absmax, uint64_t* fields, int64_t& zeros);

// True when some nonzero x is an exact power of two (zero fraction bits); NaN/Inf must not occur.
bool any_power_of_two(const float* x, int64_t n);

// Exponent histogram of finite x into h (bins from the float's exponent bits).
void histogram(const float* x, int64_t n, ExpHistogram::Chunk& h);
// The same where the caller already knows their largest magnitude (a range pass took it): one pass fewer.
void histogram(const float* x, int64_t n, float absmax, ExpHistogram::Chunk& h);

}  // namespace mpa::probes::fast
