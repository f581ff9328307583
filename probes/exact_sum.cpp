#include "probes/exact_sum.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/error.h"

namespace mpa {

namespace {

template <size_t N> using LimbArray = std::array<uint64_t, N>;

template <size_t N> void negate(LimbArray<N>& limbs) {
  uint64_t carry = 1;
  for (uint64_t& limb : limbs) {
    limb = ~limb + carry;
    carry = (carry && limb == 0) ? 1 : 0;
  }
}

}  // namespace

void ExactSum::add_shifted(uint64_t mantissa, int bit, bool negative) {
  const int limb = bit / 64, shift = bit % 64;
  uint64_t parts[2] = {mantissa << shift, shift ? mantissa >> (64 - shift) : 0};
  if (negative) {
    uint64_t borrow = 0;
    for (int i = limb; i < kLimbs; ++i) {
      const uint64_t sub = (i - limb < 2 ? parts[i - limb] : 0);
      const uint64_t before = limbs_[i];
      limbs_[i] = before - sub - borrow;
      borrow = (before < sub || (before == sub && borrow)) ? 1 : 0;
      if (!borrow && i - limb >= 1) break;
    }
  } else {
    uint64_t carry = 0;
    for (int i = limb; i < kLimbs; ++i) {
      const uint64_t add = (i - limb < 2 ? parts[i - limb] : 0);
      const uint64_t before = limbs_[i];
      limbs_[i] = before + add + carry;
      carry = (limbs_[i] < before || (carry && limbs_[i] == before)) ? 1 : 0;
      if (!carry && i - limb >= 1) break;
    }
  }
}

void ExactSum::add(double value) {
  if (std::isnan(value)) {
    nan_ = true;
    return;
  }
  if (std::isinf(value)) {
    (value > 0 ? pos_inf_ : neg_inf_) = true;
    return;
  }
  if (value == 0) return;
  int exponent = 0;
  const double fraction = std::frexp(std::fabs(value), &exponent);  // value = fraction * 2^exponent
  const uint64_t mantissa = static_cast<uint64_t>(std::ldexp(fraction, 53));
  add_shifted(mantissa, exponent - 53 - kBaseExponent, value < 0);
}

void ExactSum::add(const ExactSum& other) {
  uint64_t carry = 0;
  for (int i = 0; i < kLimbs; ++i) {
    const uint64_t before = limbs_[i];
    limbs_[i] = before + other.limbs_[i] + carry;
    carry = (limbs_[i] < before || (carry && limbs_[i] == before)) ? 1 : 0;
  }
  nan_ |= other.nan_;
  pos_inf_ |= other.pos_inf_;
  neg_inf_ |= other.neg_inf_;
}

bool ExactSum::is_zero() const {
  for (uint64_t limb : limbs_)
    if (limb) return false;
  return !nan_ && !pos_inf_ && !neg_inf_;
}

double ExactSum::value() const {
  if (nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<double>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<double>::infinity();
  if (neg_inf_) return -std::numeric_limits<double>::infinity();
  auto magnitude = limbs_;
  const bool neg = negative();
  if (neg) negate(magnitude);
  int top = kLimbs - 1;
  while (top >= 0 && magnitude[top] == 0) --top;
  if (top < 0) return 0.0;
  const int high_bit = 63 - __builtin_clzll(magnitude[top]);
  const int msb = top * 64 + high_bit;  // global index of the leading one
  // The 64 bits below and including the leading one, and whether anything lies below them, a word at a
  // time: report figures call this per tensor and target.
  const int lo = msb - 63;
  uint64_t top64 = 0;
  bool sticky = false;
  if (lo < 0) {
    top64 = magnitude[0] << -lo;  // the leading one lies in limb 0
  } else {
    const int word = lo / 64, shift = lo % 64;
    top64 = magnitude[word] >> shift;
    if (shift && word + 1 < kLimbs) top64 |= magnitude[word + 1] << (64 - shift);
    sticky = shift && (magnitude[word] & ((uint64_t{1} << shift) - 1));
    for (int i = 0; i < word && !sticky; ++i) sticky = magnitude[i] != 0;
  }
  // Round the 64-bit window to 53 bits, nearest-even.
  uint64_t mantissa = top64 >> 11;
  const uint64_t rest = top64 & 0x7FF;
  if (rest > 0x400 || (rest == 0x400 && (sticky || (mantissa & 1)))) ++mantissa;
  const double result = std::ldexp(static_cast<double>(mantissa), lo + 11 + kBaseExponent);
  return neg ? -result : result;
}

std::string ExactSum::to_string() const {
  if (nan_ || (pos_inf_ && neg_inf_)) return "nan";
  if (pos_inf_) return "inf";
  if (neg_inf_) return "-inf";
  auto magnitude = limbs_;
  const bool neg = negative();
  if (neg) negate(magnitude);
  int top = kLimbs - 1, bottom = 0;
  while (top >= 0 && magnitude[top] == 0) --top;
  if (top < 0) return "0";
  while (magnitude[bottom] == 0) ++bottom;
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (int i = top; i >= bottom; --i)
    for (int nibble = 15; nibble >= 0; --nibble) hex += digits[(magnitude[i] >> (4 * nibble)) & 0xF];
  const size_t first = hex.find_first_not_of('0');
  std::string text = neg ? "-" : "";
  text.append(hex, first).append("p").append(std::to_string(bottom * 64 + kBaseExponent));
  return text;
}

ExactSum ExactSum::parse(const std::string& text) {
  ExactSum s;
  if (text == "nan") s.nan_ = true;
  else if (text == "inf") s.pos_inf_ = true;
  else if (text == "-inf") s.neg_inf_ = true;
  if (text == "nan" || text == "inf" || text == "-inf" || text == "0") return s;
  const bool neg = !text.empty() && text[0] == '-';
  const size_t p = text.find('p');
  if (!(p != std::string::npos && p > static_cast<size_t>(neg))) fail("bad exact sum '" + text + "'");
  int exponent = 0;
  try {
    exponent = std::stoi(text.substr(p + 1));
  } catch (const std::exception&) {
    fail("bad exact sum exponent in '" + text + "'");
  }
  // In int64: an exponent near INT_MAX and many digits must not wrap past the range check.
  const int64_t bit0 = int64_t{exponent} - kBaseExponent;
  if (!(bit0 >= 0 && bit0 % 64 == 0)) fail("bad exact sum exponent in '" + text + "'");
  const std::string hex = text.substr(neg ? 1 : 0, p - (neg ? 1 : 0));
  const int64_t nibbles = static_cast<int64_t>(hex.size());
  if (!(bit0 + 4 * nibbles <= int64_t{kLimbs} * 64 - 1)) fail("exact sum '" + text + "' out of range");
  for (int64_t k = 0; k < nibbles; ++k) {
    const char c = hex[static_cast<size_t>(nibbles - 1 - k)];
    const int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (!(v >= 0)) fail("bad hex digit in exact sum '" + text + "'");
    const int64_t bit = bit0 + 4 * k;
    s.limbs_[bit / 64] |= static_cast<uint64_t>(v) << (bit % 64);
  }
  if (neg) negate(s.limbs_);
  return s;
}

}  // namespace mpa
