// Number formats a mixed-precision model stores tensors in, and how a float is rounded onto each: the
// single definition the CPU backend, the CUDA backend (scalar functions, MPA_HD) and the probes share.
//
// Every conversion rounds to nearest, ties to even, and keeps subnormals and signed zeros. Behaviour at
// the edges, per format (docs/numerics.md, "Number formats"):
//   FP16, BF16  out of range -> ±Inf; NaN -> quiet NaN keeping sign and top payload bits (as F16C does).
//   TF32        same exponent range as FP32; RNE to 10 fraction bits; Inf kept; NaN quietened, payload
//               truncated like BF16.
//   FP8 E4M3FN  no Inf. saturate (ONNX Cast default, CUDA __NV_SATFINITE): out of range and ±Inf -> ±448;
//               otherwise ±NaN (0x7F/0xFF).
//   FP8 E5M2    saturate: out of range and ±Inf -> ±57344; otherwise ±Inf (0x7C/0xFC).
//               FP8 NaN -> NaN with the sign kept (E4M3FN 0x7F/0xFF, E5M2 0x7E/0xFE: what ONNX's reference
//               implementation produces; CUDA's host code returns 0x7F for both and drops the sign).
//   FP8 FNUZ    (E4M3FNUZ, E5M2FNUZ; element types only, not audit targets) no Inf, no -0: -0 and negative
//               underflow -> +0; NaN and, without saturate, overflow -> the one NaN 0x80.
//   FP4 E2M1    (element type only) no Inf or NaN: always saturates to ±6; NaN -> the zero of the other sign.
//   E8M0        (element type only) powers of two: float_to_e8m0.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "tensor/hd.h"
#include "tensor/float16.h"

namespace mpa {

enum class Format : uint8_t { FP32, FP16, BF16, FP8E4M3FN, FP8E5M2, TF32, FP64 };
inline constexpr Format kAllFormats[] = {Format::FP32,    Format::FP16, Format::BF16, Format::FP8E4M3FN,
                                         Format::FP8E5M2, Format::TF32, Format::FP64};

// What probes need to classify a value against a format: overflow (|x| > max_finite, even where rounding
// would still give max_finite), underflow to zero (|x| < min_subnormal / 2), subnormal (|x| < min_normal).
struct FormatTraits {
  std::string_view name;  // canonical name, as parse_format accepts and reports print it
  int storage_bits;       // bits one element occupies in memory (TF32 lives in a 32-bit register)
  int exponent_bits;
  int mantissa_bits;  // explicit fraction bits, without the implicit leading one
  int exponent_bias;
  double max_finite;
  double min_normal;
  double min_subnormal;
  bool has_inf;  // false for E4M3FN: out-of-range values saturate or become NaN
};

const FormatTraits& format_traits(Format format);
inline std::string_view format_name(Format format) { return format_traits(format).name; }
// Accepts the canonical names ("fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2", "tf32", "fp64"), the ONNX
// spellings "fp8e4m3fn", "float16", "bfloat16", "float32", "float64", any letter case.
std::optional<Format> parse_format(std::string_view name);

// Format rules, the only code that knows them. TF32 is a math mode, not a storage format: its values are
// stored as FP32 and only GEMM/Conv operands are rounded to TF32 (runtime/precision.h config_for).
inline Format storage_format(Format format) { return format == Format::TF32 ? Format::FP32 : format; }
// Whether a target stores its tensors with per-tensor scales from the reference absmax (FP8 recipes):
// FP8 formats under --fp8-scaling absmax; every other format runs unscaled.
inline bool absmax_scaled(Format target, bool fp8_absmax_scaling) {
  return fp8_absmax_scaling && (target == Format::FP8E4M3FN || target == Format::FP8E5M2);
}

namespace detail {

// Shifts magnitude right by `shift` (1..31) bits, rounding to nearest with ties to even.
MPA_HD uint32_t shift_right_round_even(uint32_t magnitude, uint32_t shift) {
  const uint32_t kept = magnitude >> shift;
  const uint32_t dropped = magnitude & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  return kept + ((dropped > halfway || (dropped == halfway && (kept & 1u))) ? 1u : 0u);
}

// Which codes of a narrow float are special. Ieee: the all-ones exponent holds Inf and NaNs (E5M2).
// FiniteNan, OCP "FN": no Inf, only the all-ones codes are NaN (E4M3FN). UnsignedZero, "FNUZ": no Inf,
// no -0, the one NaN is the -0 code 0x80, and the bias is one more than IEEE's (E4M3FNUZ, E5M2FNUZ).
// Finite: every code is a number (E2M1).
enum class NarrowSpecials : uint8_t { Ieee, FiniteNan, UnsignedZero, Finite };

// A binary float narrower than float32 with IEEE layout: sign, ExponentBits, MantissaBits. Written once
// for every float8/float4 format so that they differ only in these three parameters.
template <int ExponentBits, int MantissaBits, NarrowSpecials Specials>
struct NarrowFloat {
  static constexpr bool kHasInf = Specials == NarrowSpecials::Ieee;
  static constexpr uint32_t kBias =
      (1u << (ExponentBits - 1)) - 1u + (Specials == NarrowSpecials::UnsignedZero ? 1u : 0u);
  static constexpr uint32_t kSignBit = 1u << (ExponentBits + MantissaBits);
  static constexpr uint32_t kFractionMask = (1u << MantissaBits) - 1u;
  static constexpr uint32_t kTopExponentCode = ((1u << ExponentBits) - 1u) << MantissaBits;
  static constexpr uint32_t kInfCode = kTopExponentCode;  // meaningful only when kHasInf
  // Finite has no NaN code: kNanCode is then unused.
  static constexpr uint32_t kNanCode = Specials == NarrowSpecials::Ieee ? kTopExponentCode | (1u << (MantissaBits - 1))
                                       : Specials == NarrowSpecials::FiniteNan ? kTopExponentCode | kFractionMask
                                                                               : kSignBit;
  static constexpr uint32_t kMaxFiniteCode = Specials == NarrowSpecials::Ieee        ? kInfCode - 1u
                                             : Specials == NarrowSpecials::FiniteNan ? kNanCode - 1u
                                                                                     : kSignBit - 1u;
  static constexpr uint32_t kDroppedBits = 23u - MantissaBits;
  // Biased float32 exponent of this format's smallest normal, 2^(1 - bias).
  static constexpr uint32_t kMinNormalFloatExponent = 127u + 1u - kBias;

  // The code nearest to a finite float magnitude (sign cleared); may exceed kMaxFiniteCode on overflow.
  MPA_HD static uint32_t round_magnitude(uint32_t magnitude) {
    const uint32_t float_exponent = magnitude >> 23;
    if (float_exponent >= kMinNormalFloatExponent) {
      // Rebias the exponent in place; a carry out of the fraction correctly bumps the exponent.
      return shift_right_round_even(magnitude - ((127u - kBias) << 23), kDroppedBits);
    }
    // Subnormal here: count units of 2^(1 - bias - MantissaBits). Float subnormals (exponent 0) have no
    // implicit bit and the exponent of 1.
    const uint32_t significand = (magnitude & 0x7FFFFFu) | (float_exponent != 0 ? 0x800000u : 0u);
    const uint32_t shift = kDroppedBits + kMinNormalFloatExponent - (float_exponent != 0 ? float_exponent : 1u);
    if (shift > 24u) return 0u;  // below half the smallest subnormal (significand < 2^24)
    return shift_right_round_even(significand, shift);
  }

  // saturate is ONNX Cast's attribute; a Finite format always saturates (it has nothing else to give).
  MPA_HD static uint32_t from_float(float value, bool saturate) {
    const uint32_t bits = float_bits(value);
    const uint32_t sign = (bits >> 31) << (ExponentBits + MantissaBits);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) {
      if constexpr (Specials == NarrowSpecials::UnsignedZero) return kNanCode;
      // No NaN to give: the zero of the other sign, bit for bit what ONNX's reference (ml_dtypes) gives.
      else if constexpr (Specials == NarrowSpecials::Finite)
        return sign ^ kSignBit;
      else
        return sign | kNanCode;
    }
    // ±Inf takes the overflow branch: ONNX Cast saturates it like any out-of-range value.
    const uint32_t code = magnitude == 0x7F800000u ? kMaxFiniteCode + 1u : round_magnitude(magnitude);
    const bool unsigned_zero = Specials == NarrowSpecials::UnsignedZero;
    if (code <= kMaxFiniteCode) return unsigned_zero && code == 0 ? 0u : sign | code;
    if (saturate || Specials == NarrowSpecials::Finite) return sign | kMaxFiniteCode;
    return unsigned_zero ? kNanCode : sign | (kHasInf ? kInfCode : kNanCode);
  }

  MPA_HD static float to_float(uint32_t code) {
    const uint32_t sign = (code & kSignBit) << (31 - ExponentBits - MantissaBits);
    const uint32_t magnitude_code = code & (kSignBit - 1u);
    const uint32_t exponent = magnitude_code >> MantissaBits;
    const uint32_t fraction = magnitude_code & kFractionMask;
    const bool is_nan_or_inf = Specials == NarrowSpecials::Ieee ? magnitude_code >= kTopExponentCode
                               : Specials == NarrowSpecials::FiniteNan
                                   ? magnitude_code == kNanCode
                                   : Specials == NarrowSpecials::UnsignedZero && code == kNanCode;
    if (is_nan_or_inf) {
      if (kHasInf && fraction == 0) return bits_float(sign | 0x7F800000u);
      // The FNUZ NaN's code has the sign bit set, but it has no sign (ml_dtypes decodes it positive).
      return bits_float((Specials == NarrowSpecials::UnsignedZero ? 0u : sign) | 0x7FC00000u);
    }
    if (exponent == 0) {  // subnormal: fraction units of 2^(1 - bias - MantissaBits), exact in float
      const float unit = bits_float((kMinNormalFloatExponent - MantissaBits) << 23);
      return bits_float(sign | float_bits(static_cast<float>(fraction) * unit));
    }
    return bits_float(sign | ((exponent + 127u - kBias) << 23) | (fraction << kDroppedBits));
  }
};

using Fp8E4M3FN = NarrowFloat<4, 3, NarrowSpecials::FiniteNan>;
using Fp8E5M2 = NarrowFloat<5, 2, NarrowSpecials::Ieee>;
using Fp8E4M3FNUZ = NarrowFloat<4, 3, NarrowSpecials::UnsignedZero>;
using Fp8E5M2FNUZ = NarrowFloat<5, 2, NarrowSpecials::UnsignedZero>;
using Fp4E2M1 = NarrowFloat<2, 1, NarrowSpecials::Finite>;

}  // namespace detail

MPA_HD uint8_t float_to_fp8_e4m3fn(float value, bool saturate = true) {
  return static_cast<uint8_t>(detail::Fp8E4M3FN::from_float(value, saturate));
}
MPA_HD uint8_t float_to_fp8_e5m2(float value, bool saturate = true) {
  return static_cast<uint8_t>(detail::Fp8E5M2::from_float(value, saturate));
}
MPA_HD float fp8_e4m3fn_to_float(uint8_t code) { return detail::Fp8E4M3FN::to_float(code); }
MPA_HD float fp8_e5m2_to_float(uint8_t code) { return detail::Fp8E5M2::to_float(code); }

// E8M0 (the OCP MX scale format): an unsigned power of two 2^(code - 127), no zero, 0xFF the NaN. A float
// keeps only its exponent, the fraction rounding it up, down or to nearest (ties up) per ONNX Cast's
// round_mode; saturate stops a round-up at 2^127 instead of NaN. Like ONNX's reference, the sign is
// ignored (negative inputs are undefined by the spec) and Inf becomes NaN.
enum class E8M0Rounding : uint8_t { Up, Down, Nearest };
MPA_HD uint8_t float_to_e8m0(float value, bool saturate = true, E8M0Rounding rounding = E8M0Rounding::Up) {
  const uint32_t bits = float_bits(value);
  const uint32_t exponent = (bits >> 23) & 0xFFu;
  if (exponent == 0xFFu) return 0xFFu;
  bool round_up = false;
  if (rounding == E8M0Rounding::Up) {
    round_up = (bits & 0x7FFFFFu) != 0;
  } else if (rounding == E8M0Rounding::Nearest) {
    // The reference's guard/round/sticky rule: with the guard bit set, round up unless exactly halfway
    // from a subnormal (exponent 0 has no implicit bit, so "halfway" there is a tie kept down).
    const bool guard = (bits & 0x400000u) != 0, rest = (bits & 0x3FFFFFu) != 0;
    round_up = guard && (rest || exponent > 0);
  }
  if (round_up && saturate && exponent == 0xFEu) round_up = false;
  return static_cast<uint8_t>(exponent + (round_up ? 1u : 0u));
}
MPA_HD float e8m0_to_float(uint8_t code) {
  if (code == 0xFFu) return bits_float(0x7FC00000u);
  return code == 0 ? bits_float(0x00400000u) : bits_float(static_cast<uint32_t>(code) << 23);  // 2^-127: subnormal
}

// TF32 as tensor cores read FP32 operands when cuBLAS converts them: RNE to 10 fraction bits (cuBLAS
// documents RNE; CUTLASS's own default is round-half-away, see docs). The result is still a float.
MPA_HD float round_to_tf32(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return bits_float((bits | 0x00400000u) & 0xFFFFE000u);  // quiet NaN
  const uint32_t rounding = 0xFFFu + ((bits >> 13) & 1u);  // carries into the exponent, up to Inf
  return bits_float((bits + rounding) & 0xFFFFE000u);
}

// What storing `value` in `format` and loading it back gives. fp8_saturate selects ONNX Cast's saturate
// attribute (default 1, and what CUDA's fp8 constructors do).
MPA_HD float round_to_format(Format format, float value, bool fp8_saturate = true) {
  switch (format) {
    case Format::FP16: return half_to_float(float_to_half(value));
    case Format::BF16: return bfloat16_to_float(float_to_bfloat16(value));
    case Format::FP8E4M3FN: return fp8_e4m3fn_to_float(float_to_fp8_e4m3fn(value, fp8_saturate));
    case Format::FP8E5M2: return fp8_e5m2_to_float(float_to_fp8_e5m2(value, fp8_saturate));
    case Format::TF32: return round_to_tf32(value);
    case Format::FP32:
    case Format::FP64: return value;  // every float is on both grids
  }
  return value;
}

// [SECTION] Bulk conversions with run-time dispatch (host only; callers parallelise).
//
// Avx2 runs F16C for FP16 and the scalar functions above compiled for AVX2 (GCC vectorises them);
// Avx512 the same compiled for AVX-512F. All paths give the same bits as the scalar functions, NaN
// payloads included (tests/exhaustive proves it for every float). A path the CPU lacks falls back to the
// best one it has.
enum class ConversionPath : uint8_t { Scalar, Avx2, Avx512 };
ConversionPath best_conversion_path();  // detected once with __builtin_cpu_supports
std::string_view conversion_path_name(ConversionPath path);

void floats_to_half(const float* in, uint16_t* out, int64_t n, ConversionPath path = best_conversion_path());
void halves_to_float(const uint16_t* in, float* out, int64_t n, ConversionPath path = best_conversion_path());
void floats_to_bfloat16(const float* in, uint16_t* out, int64_t n, ConversionPath path = best_conversion_path());
void bfloat16s_to_float(const uint16_t* in, float* out, int64_t n, ConversionPath path = best_conversion_path());
// In place: the hot path of emulating a format (round every element of a float buffer onto its grid).
void round_to_format(Format format, float* data, int64_t n, ConversionPath path = best_conversion_path(),
                     bool fp8_saturate = true);
// The same through a per-tensor scale (FP8 recipes): each x becomes round(x / scale) * scale (FP32 and
// FP64 leave data as it is, whatever the scale).
void round_to_format_scaled(Format format, float* data, int64_t n, float scale);

}  // namespace mpa
