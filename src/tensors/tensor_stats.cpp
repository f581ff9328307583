#include "tensors/tensor_stats.h"

#include <bit>
#include <cstring>
#include <mutex>

#include "common/parallel.h"
#include "probes/fast_paths.h"

namespace mpa::tensors {

using probes::ExpHistogram;
using probes::FormatFit;
using probes::RangeProbe;

// [SECTION] MagnitudeExponents

void MagnitudeExponents::allocate() {
  if (counts_.empty()) {
    counts_.assign(static_cast<size_t>(kMaxExp - kMinExp + 1), 0);
    powers_of_two_.assign(counts_.size(), 0);
  }
}

void MagnitudeExponents::add(double magnitude) {
  uint64_t bits;
  std::memcpy(&bits, &magnitude, sizeof bits);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  // Normal doubles are powers of two with no fraction bits; subnormal ones with a single bit.
  const bool power_of_two = (bits >> 52) != 0 ? fraction == 0 : std::has_single_bit(fraction);
  add_exponent(probes::exponent_of(magnitude), 1, power_of_two);
}

void MagnitudeExponents::add_exponent(int exponent, int64_t count, int64_t powers_of_two) {
  allocate();
  counts_[slot(exponent)] += count;
  powers_of_two_[slot(exponent)] += powers_of_two;
  total_ += count;
}

void MagnitudeExponents::merge(const MagnitudeExponents& other) {
  if (other.total_ == 0) return;
  allocate();
  for (size_t i = 0; i < counts_.size(); ++i) {
    counts_[i] += other.counts_[i];
    powers_of_two_[i] += other.powers_of_two_[i];
  }
  total_ += other.total_;
}

int64_t MagnitudeExponents::at_most_power_of_two(int k) const {
  if (k > kMaxExp) return total_;
  if (k < kMinExp || total_ == 0) return 0;
  int64_t below = 0;
  for (int e = kMinExp; e < k; ++e) below += counts_[slot(e)];
  return below + powers_of_two_[slot(k)];
}

int MagnitudeExponents::largest_power_of_two_with_at_most(double count) const {
  if (static_cast<double>(total_) <= count) return kMaxExp + 1;
  int64_t at_or_above = 0;  // magnitudes of exponent >= k
  for (int k = kMaxExp; k >= kMinExp; --k) {
    at_or_above += counts_[slot(k)];
    if (static_cast<double>(total_ - at_or_above + powers_of_two_[slot(k)]) <= count) return k;
  }
  return kMinExp - 1;
}

ExpHistogram MagnitudeExponents::exp_histogram(int64_t zeros, int64_t infinities, int64_t nans) const {
  ExpHistogram h;
  auto bin = [&h](int index) -> int64_t& { return h.counts[static_cast<size_t>(index)]; };
  bin(ExpHistogram::kZero) = zeros;
  bin(ExpHistogram::kInf) = infinities;
  bin(ExpHistogram::kNan) = nans;
  for (int e = kMinExp; e <= kMaxExp && total_ > 0; ++e) {
    const int64_t n = counts_[slot(e)];
    if (e < ExpHistogram::kMinExp)
      bin(ExpHistogram::kBelow) += n;
    else if (e > ExpHistogram::kMaxExp)
      bin(ExpHistogram::kAbove) += n;
    else
      bin(ExpHistogram::kFirstPow + e - ExpHistogram::kMinExp) += n;
  }
  return h;
}

// [SECTION] Scale windows

int flush_limit_log2(Format format) {
  int exponent = 0;
  const double fraction = std::frexp(format_traits(format).min_subnormal / 2, &exponent);
  require(fraction == 0.5, "the flush limit of " + std::string(format_name(format)) + " is not a power of two");
  return exponent - 1;
}

int64_t flushed_at_scale(const MagnitudeExponents& magnitudes, Format format, int scale_log2) {
  return magnitudes.at_most_power_of_two(flush_limit_log2(format) - scale_log2);
}

int largest_safe_scale_log2(double absmax, Format format) {
  const double max_finite = format_traits(format).max_finite;
  int s = probes::exponent_of(max_finite) - probes::exponent_of(absmax);
  while (std::ldexp(absmax, s) > max_finite) --s;
  while (std::ldexp(absmax, s + 1) <= max_finite) ++s;
  return s;
}

ScaleWindow scale_window(const MagnitudeExponents& magnitudes, double absmax, int64_t nonfinite, Format format,
                         double max_flush_fraction) {
  ScaleWindow w;
  if (nonfinite > 0) {
    w.empty = true;
    w.reason =
        std::to_string(nonfinite) + " NaN/Inf value" + (nonfinite == 1 ? "" : "s") + ": no scale makes them finite";
    return w;
  }
  if (magnitudes.total() == 0) {
    w.reason = "no nonzero finite values: every scale is safe";
    return w;
  }
  const double total = static_cast<double>(magnitudes.total());
  w.hi_log2 = largest_safe_scale_log2(absmax, format);
  w.flush_fraction_at_hi = static_cast<double>(flushed_at_scale(magnitudes, format, *w.hi_log2)) / total;
  // At scale 2^s the values at most 2^(limit - s) flush: the smallest s is the largest such power that
  // holds few enough of them.
  const int k = magnitudes.largest_power_of_two_with_at_most(max_flush_fraction * total);
  if (k > MagnitudeExponents::kMaxExp) {
    w.reason = "the flush limit allows every value to flush: no lower bound";
    return w;
  }
  w.lo_log2 = flush_limit_log2(format) - k;
  if (*w.lo_log2 > *w.hi_log2) {
    w.empty = true;
    w.reason = "2^" + std::to_string(*w.hi_log2) + " is the largest scale without overflow, but 2^" +
               std::to_string(*w.lo_log2) + " is the smallest that keeps flushes within the limit";
  }
  return w;
}

// [SECTION] The fused pass

namespace {

// One thread's statistics over its chunks; partials merge exactly, so their order does not matter.
struct Partial {
  RangeProbe range;
  MagnitudeExponents magnitudes;
  std::vector<FormatFit> fits;
};

// A float32 chunk of finite values through the vectorised kernels; false (nothing added) when the chunk
// holds NaN or Inf.
bool add_finite_float32_chunk(const float* x, int64_t n, const std::vector<FormatFit::Bounds>& bounds, Partial& p) {
  RangeProbe::Chunk range;
  probes::fast::range(x, n, range);
  if (!std::isfinite(range.sum_sq)) return false;
  p.range.absorb(range);
  uint64_t fields[256] = {};
  int64_t zeros = 0;
  probes::fast::exponent_fields(x, n, static_cast<float>(range.absmax()), fields, zeros);
  for (int field = 1; field < 255; ++field)
    if (fields[field]) p.magnitudes.add_exponent(field - 127, static_cast<int64_t>(fields[field]), 0);
  // Subnormal floats (field 0) and exact powers of two are rare: one more look at this chunk for them.
  if (fields[0] > 0 || probes::fast::any_power_of_two(x, n)) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t u = std::bit_cast<uint32_t>(x[i]) & 0x7FFFFFFFu;
      const uint32_t field = u >> 23, fraction = u & 0x7FFFFFu;
      if (field == 0 && fraction != 0)
        p.magnitudes.add(std::fabs(static_cast<double>(x[i])));
      else if (field != 0 && fraction == 0)
        p.magnitudes.add_exponent(static_cast<int>(field) - 127, 0, 1);
    }
  }
  for (size_t k = 0; k < bounds.size(); ++k) {
    FormatFit::Chunk fit;
    probes::fast::format_fit(x, n, bounds[k], fit);
    p.fits[k].absorb(fit);
  }
  return true;
}

void add_any_chunk(const Tensor& t, int64_t begin, int64_t end, const std::vector<FormatFit::Bounds>& bounds,
                   Partial& p) {
  RangeProbe::Chunk range;
  std::vector<FormatFit::Chunk> fits(bounds.size());
  probes::for_each_value(t, begin, end, [&](double x, int64_t) {
    range.add(x);
    for (size_t k = 0; k < bounds.size(); ++k) fits[k].add(x, bounds[k]);
    if (std::isfinite(x) && x != 0) p.magnitudes.add(std::fabs(x));
  });
  p.range.absorb(range);
  for (size_t k = 0; k < bounds.size(); ++k) p.fits[k].absorb(fits[k]);
}

}  // namespace

TensorStats analyse_tensor(const Tensor& t, std::span<const Format> formats, double max_flush_fraction) {
  TensorStats stats;
  stats.dtype = t.dtype();
  stats.shape = t.shape();
  stats.floating = dtype_is_float(t.dtype());
  if (!stats.floating) {
    stats.range.count = t.numel();
    return stats;
  }
  std::vector<FormatFit::Bounds> bounds;
  for (Format f : formats) bounds.emplace_back(f);
  Partial total{{}, {}, std::vector<FormatFit>(formats.size())};
  std::mutex merging;
  const int64_t n = t.numel(), chunks = (n + probes::kChunk - 1) / probes::kChunk;
  // Each thread folds its chunks into a partial of its own; partials merge exactly, in any order.
  parallel_for(chunks, 1, [&](int64_t first, int64_t last) {
    Partial p{{}, {}, std::vector<FormatFit>(formats.size())};
    for (int64_t c = first; c < last; ++c) {
      const int64_t begin = c * probes::kChunk, end = std::min(n, begin + probes::kChunk);
      if (!(t.dtype() == DType::Float32 && add_finite_float32_chunk(t.data<float>() + begin, end - begin, bounds, p)))
        add_any_chunk(t, begin, end, bounds, p);
    }
    const std::lock_guard<std::mutex> lock(merging);
    total.range.merge(p.range);
    total.magnitudes.merge(p.magnitudes);
    for (size_t k = 0; k < formats.size(); ++k) total.fits[k].merge(p.fits[k]);
  });
  stats.range = total.range;
  stats.magnitudes = std::move(total.magnitudes);
  stats.histogram =
      stats.magnitudes.exp_histogram(stats.range.zeros, stats.range.pos_inf + stats.range.neg_inf, stats.range.nan);
  const double absmax = stats.range.absmax();
  // Significant flushes need the absmax: a second pass, one for every format where something flushed.
  std::vector<size_t> flushing;
  std::vector<double> relevant(formats.size());
  for (size_t k = 0; k < formats.size(); ++k) {
    relevant[k] = FormatFit::significant_flush_threshold(formats[k], absmax);
    if (total.fits[k].flush_to_zero > 0) flushing.push_back(k);
  }
  if (!flushing.empty()) {
    parallel_for(chunks, 1, [&](int64_t first, int64_t last) {
      std::vector<int64_t> counts(formats.size());
      for (int64_t c = first; c < last; ++c) {
        const int64_t begin = c * probes::kChunk, end = std::min(n, begin + probes::kChunk);
        for (size_t k : flushing) counts[k] += FormatFit::significant_flushes_in(t, begin, end, relevant[k], bounds[k]);
      }
      const std::lock_guard<std::mutex> lock(merging);
      for (size_t k : flushing) total.fits[k].significant_flush += counts[k];
    });
  }
  for (size_t k = 0; k < formats.size(); ++k) {
    FormatFigures figures{formats[k], total.fits[k], FormatFit::headroom_bits(formats[k], absmax), {}};
    figures.window = scale_window(stats.magnitudes, absmax, stats.nonfinite(), formats[k], max_flush_fraction);
    stats.formats.push_back(std::move(figures));
  }
  return stats;
}

}  // namespace mpa::tensors
