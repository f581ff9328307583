// Scalar IEEE binary16 and bfloat16 conversions, round-to-nearest-even, subnormals and signed zeros
// kept, Inf/NaN preserved. Device-clean: the CUDA backend shares these exact bit manipulations.
#pragma once
#include <cstdint>
#include <cstring>

#include "tensor/hd.h"

namespace mpa {

struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

MPA_HD uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
MPA_HD float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

MPA_HD float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) {  // Inf, or NaN quietened with its payload kept, as F16C's vcvtph2ps does
    const uint32_t quiet_bit = mantissa != 0 ? 0x00400000u : 0u;
    return bits_float(sign | 0x7F800000u | (mantissa << 13) | quiet_bit);
  }
  if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_float(sign);
  // Subnormal: value = mantissa * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
  return bits_float(sign | float_bits(magnitude));
}

MPA_HD uint16_t float_to_half(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // Inf or NaN: keep a quiet NaN with the top payload bits, as F16C does.
    if (abs == 0x7F800000u) return sign | 0x7C00u;
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  }
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to Inf
  if (abs < 0x38800000u) {                        // below 2^-14: subnormal or zero in half
    if (abs < 0x33000000u) return sign;           // <= 2^-25 rounds to zero (tie to even 0)
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t result = abs - 0x38000000u;  // rebias exponent 127 -> 15
  const uint32_t remainder = result & 0x1FFFu;
  result >>= 13;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

MPA_HD float bfloat16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

MPA_HD uint16_t float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

}  // namespace mpa
