// An exact, order-independent sum of doubles (a fixed-point superaccumulator covering every double).
// Probes sum per-sample partials into it, so statistics merged across samples and shards are bit-identical
// to those of one run over all samples, whatever the grouping (`mpaudit merge`). Across machines that holds
// where the per-chunk partials are: the AVX-512 and portable kernels associate a chunk's sum differently.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace mpa {

class ExactSum {
 public:
  void add(double value);
  void add(const ExactSum& other);
  // The sum, correctly rounded to double (NaN/±Inf when a non-finite value was added).
  double value() const;
  bool is_zero() const;
  // Exact text form "<sign><hex mantissa>p<binary exponent>" (or "nan", "inf", "-inf"); parse() inverts it.
  std::string to_string() const;
  static ExactSum parse(const std::string& text);
  bool operator==(const ExactSum& other) const = default;

 private:
  // Bit 0 of limb 0 weighs 2^kBaseExponent (below the lowest mantissa bit of a subnormal); 36 limbs
  // span every double, 2^64 additions of them and a sign bit.
  static constexpr int kLimbs = 36;
  static constexpr int kBaseExponent = -1152;
  void add_shifted(uint64_t mantissa, int bit, bool negative);
  bool negative() const { return static_cast<int64_t>(limbs_[kLimbs - 1]) < 0; }
  std::array<uint64_t, kLimbs> limbs_{};  // two's complement, little-endian limbs
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

}  // namespace mpa
