// What one tensor's values mean for each target format: the model audit's range, exponent histogram and
// format fit (probes/), and the safe power-of-two scale window [2^lo, 2^hi]: the scales s at which no
// value overflows (|x| * 2^s <= the format's max) and at most a given fraction of the nonzero values
// flushes to zero (|x| * 2^s <= half the smallest subnormal, FormatFit's limit).
//
// Flushing at every scale comes from MagnitudeExponents: counts by binary exponent over the whole double
// range with the exact powers of two apart, since every format's flush limit is a power of two and
// |x| <= 2^k holds for the values below 2^k and those equal to it.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "probes/exp_histogram.h"
#include "probes/format_fit.h"
#include "probes/range_probe.h"
#include "tensor/formats.h"
#include "tensor/tensor.h"

namespace mpa::tensors {

class MagnitudeExponents {
 public:
  static constexpr int kMinExp = -1074, kMaxExp = 1023;  // every finite nonzero double
  void add(double magnitude);                            // finite and nonzero
  void add_exponent(int exponent, int64_t count, int64_t powers_of_two);
  void merge(const MagnitudeExponents& other);
  int64_t total() const { return total_; }
  // How many magnitudes are at most 2^k.
  int64_t at_most_power_of_two(int k) const;
  // The largest k with at_most_power_of_two(k) <= count: kMaxExp + 1 when every magnitude may be counted.
  int largest_power_of_two_with_at_most(double count) const;
  // The model audit's exponent histogram of these magnitudes, with zeros, Inf and NaN counted apart.
  probes::ExpHistogram exp_histogram(int64_t zeros, int64_t infinities, int64_t nans) const;

 private:
  size_t slot(int exponent) const { return static_cast<size_t>(exponent - kMinExp); }
  void allocate();
  // Empty until the first magnitude: the tensors of a long run keep none once their windows are made.
  std::vector<int64_t> counts_, powers_of_two_;
  int64_t total_ = 0;
};

// log2 of a format's flush limit (half its smallest subnormal), an integer for every format.
int flush_limit_log2(Format format);
// Nonzero finite values that flush to zero when scaled by 2^scale_log2 and stored in `format`.
int64_t flushed_at_scale(const MagnitudeExponents& magnitudes, Format format, int scale_log2);
// The largest s with absmax * 2^s <= the format's largest finite value (absmax > 0).
int largest_safe_scale_log2(double absmax, Format format);

struct ScaleWindow {
  std::optional<int> lo_log2, hi_log2;  // nullopt: unbounded on that side
  bool empty = false;
  std::string reason;                 // why it is empty or unbounded; empty text for an ordinary window
  double flush_fraction_at_hi = NAN;  // of the nonzero values, at the largest safe scale
};

// The window of values with these magnitudes, largest finite magnitude `absmax` and `nonfinite` NaN/Inf
// values (no scale makes those finite: the window is then empty).
ScaleWindow scale_window(const MagnitudeExponents& magnitudes, double absmax, int64_t nonfinite, Format format,
                         double max_flush_fraction);

struct FormatFigures {
  Format format;
  probes::FormatFit fit;
  double headroom_bits = NAN;  // log2(max finite / absmax); negative when values overflow
  ScaleWindow window;
};

struct TensorStats {
  DType dtype = DType::Undefined;
  Shape shape;
  bool floating = false;  // integer and bool tensors get their count only: formats are about floats
  probes::RangeProbe range;
  probes::ExpHistogram histogram;
  std::vector<FormatFigures> formats;  // in the order asked
  MagnitudeExponents magnitudes;       // for windows over several tensors (loss scale)
  int64_t nonfinite() const { return range.nan + range.pos_inf + range.neg_inf; }
};

// Every figure of `t` for each format, in one fused pass over fixed chunks (float32 chunks of finite values
// take the vectorised kernels of probes/fast_paths.h) plus a second one for significant flushes where
// something flushed. Deterministic: chunk partials merge exactly.
TensorStats analyse_tensor(const Tensor& t, std::span<const Format> formats, double max_flush_fraction);

}  // namespace mpa::tensors
