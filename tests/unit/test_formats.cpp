// Number formats: names, traits, FP8 and TF32 edge cases, and bulk paths against the scalar code on a
// small set of awkward values. The every-float proofs live in tests/exhaustive/.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/formats.h"

using namespace mpa;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<ConversionPath> usable_paths() {
  std::vector<ConversionPath> paths;
  for (ConversionPath p : {ConversionPath::Scalar, ConversionPath::Avx2, ConversionPath::Avx512})
    if (p <= best_conversion_path()) paths.push_back(p);
  return paths;
}

// Values at every boundary the formats have, both signs, plus NaNs with payloads; an odd count so the
// SIMD loops also run their scalar tails.
std::vector<float> awkward_values() {
  const uint32_t bit_patterns[] = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x33000000u, 0x33000001u,
                                   0x38800000u, 0x3F800000u, 0x3F801000u, 0x3F803000u, 0x3F808000u, 0x3F818000u,
                                   0x477FEFFFu, 0x477FF000u, 0x43E00000u, 0x43E80000u, 0x43E80001u, 0x47700000u,
                                   0x47800000u, 0x7F7F7FFFu, 0x7F7F8000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u,
                                   0x7FC00000u, 0x7FFFFFFFu, 0x7FA12345u, 0x3A800000u, 0x3A000000u, 0x3AC00000u,
                                   0x37800000u, 0x37000000u, 0x37C00000u};
  std::vector<float> values;
  for (uint32_t bits : bit_patterns) {
    values.push_back(bits_float(bits));
    values.push_back(bits_float(bits | 0x80000000u));
  }
  values.push_back(3.14159f);
  return values;
}

}  // namespace

TEST(Formats, NamesParseBothWays) {
  for (Format format : kAllFormats) EXPECT_EQ(parse_format(format_name(format)), format);
  EXPECT_EQ(parse_format("FP16"), Format::FP16);
  EXPECT_EQ(parse_format("fp8e4m3fn"), Format::FP8E4M3FN);
  EXPECT_EQ(parse_format("bfloat16"), Format::BF16);
  EXPECT_EQ(parse_format("fp8"), std::nullopt);  // ambiguous between E4M3 and E5M2: refused
  EXPECT_EQ(parse_format(""), std::nullopt);
}

TEST(Formats, TraitsMatchTheDecodedExtremes) {
  EXPECT_EQ(format_traits(Format::FP16).max_finite, half_to_float(0x7BFF));
  EXPECT_EQ(format_traits(Format::FP16).min_normal, half_to_float(0x0400));
  EXPECT_EQ(format_traits(Format::FP16).min_subnormal, half_to_float(0x0001));
  EXPECT_EQ(format_traits(Format::BF16).max_finite, bfloat16_to_float(0x7F7F));
  EXPECT_EQ(format_traits(Format::BF16).min_subnormal, bfloat16_to_float(0x0001));
  EXPECT_EQ(format_traits(Format::FP8E4M3FN).max_finite, fp8_e4m3fn_to_float(0x7E));
  EXPECT_EQ(format_traits(Format::FP8E4M3FN).min_normal, fp8_e4m3fn_to_float(0x08));
  EXPECT_EQ(format_traits(Format::FP8E4M3FN).min_subnormal, fp8_e4m3fn_to_float(0x01));
  EXPECT_EQ(format_traits(Format::FP8E5M2).max_finite, fp8_e5m2_to_float(0x7B));
  EXPECT_EQ(format_traits(Format::FP8E5M2).min_normal, fp8_e5m2_to_float(0x04));
  EXPECT_EQ(format_traits(Format::FP8E5M2).min_subnormal, fp8_e5m2_to_float(0x01));
  EXPECT_EQ(format_traits(Format::TF32).max_finite, round_to_tf32(0x1.ffcp127f));
  EXPECT_EQ(format_traits(Format::TF32).min_subnormal, round_to_tf32(0x1p-136f));
  EXPECT_EQ(format_traits(Format::FP32).max_finite, std::numeric_limits<float>::max());
  EXPECT_EQ(format_traits(Format::FP32).min_subnormal, std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(format_traits(Format::FP64).min_subnormal, std::numeric_limits<double>::denorm_min());
  for (Format format : kAllFormats) {
    const FormatTraits& t = format_traits(format);
    EXPECT_EQ(t.min_normal, std::ldexp(1.0, 1 - t.exponent_bias)) << t.name;
    EXPECT_EQ(t.min_subnormal, std::ldexp(1.0, 1 - t.exponent_bias - t.mantissa_bits)) << t.name;
    EXPECT_EQ(t.has_inf, format != Format::FP8E4M3FN) << t.name;
  }
}

TEST(Formats, Fp8E4M3FNFollowsOnnxCast) {
  EXPECT_EQ(float_to_fp8_e4m3fn(1.0f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3fn(-0.0f), 0x80);
  EXPECT_EQ(float_to_fp8_e4m3fn(448.f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3fn(464.f, false), 0x7E);      // tie between 448 and (NaN) 480: even
  EXPECT_EQ(float_to_fp8_e4m3fn(464.0001f, false), 0x7F);  // rounds past max: NaN without saturation
  EXPECT_EQ(float_to_fp8_e4m3fn(-1e6f, false), 0xFF);
  EXPECT_EQ(float_to_fp8_e4m3fn(1e6f, true), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3fn(kInf, true), 0x7E);  // ONNX: Inf saturates to max
  EXPECT_EQ(float_to_fp8_e4m3fn(-kInf, true), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3fn(-kInf, false), 0xFF);  // -Inf -> -NaN
  EXPECT_EQ(float_to_fp8_e4m3fn(std::nanf(""), true), 0x7F);
  EXPECT_EQ(float_to_fp8_e4m3fn(-std::nanf(""), true), 0xFF);
  EXPECT_EQ(float_to_fp8_e4m3fn(0x1p-9f), 0x01);   // smallest subnormal
  EXPECT_EQ(float_to_fp8_e4m3fn(0x1p-10f), 0x00);  // half of it: tie to even zero
  EXPECT_EQ(float_to_fp8_e4m3fn(0x1.8p-10f), 0x01);
  EXPECT_EQ(float_to_fp8_e4m3fn(0x1.ep-7f), 0x08);  // 15/16 of min normal rounds up into it
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_float(0xFF)));
  EXPECT_EQ(fp8_e4m3fn_to_float(0x78), 256.f);  // the all-ones exponent holds numbers
}

TEST(Formats, Fp8E5M2FollowsOnnxCast) {
  EXPECT_EQ(float_to_fp8_e5m2(1.0f), 0x3C);
  EXPECT_EQ(float_to_fp8_e5m2(57344.f), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(61439.f, false), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(61440.f, false), 0x7C);  // tie, odd max: rounds up to Inf
  EXPECT_EQ(float_to_fp8_e5m2(61440.f, true), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(kInf, true), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(-kInf, true), 0xFB);
  EXPECT_EQ(float_to_fp8_e5m2(-kInf, false), 0xFC);
  EXPECT_EQ(float_to_fp8_e5m2(std::nanf(""), false), 0x7E);
  EXPECT_EQ(float_to_fp8_e5m2(-std::nanf(""), false), 0xFE);
  EXPECT_EQ(float_to_fp8_e5m2(0x1p-16f), 0x01);
  EXPECT_EQ(float_to_fp8_e5m2(0x1p-17f), 0x00);
  EXPECT_EQ(float_to_fp8_e5m2(0x1.8p-17f), 0x01);
  EXPECT_EQ(fp8_e5m2_to_float(0x7C), kInf);
  EXPECT_EQ(fp8_e5m2_to_float(0xFC), -kInf);
  for (uint8_t nan_code : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}) EXPECT_TRUE(std::isnan(fp8_e5m2_to_float(nan_code)));
}

TEST(Formats, EveryFp8CodeRoundTrips) {
  for (uint32_t code = 0; code < 256; ++code) {
    const uint8_t c = static_cast<uint8_t>(code);
    for (bool saturate : {true, false}) {
      const float e4m3 = fp8_e4m3fn_to_float(c);
      if (!std::isnan(e4m3)) {
        EXPECT_EQ(float_to_fp8_e4m3fn(e4m3, saturate), code) << std::hex << code;
      }
      const float e5m2 = fp8_e5m2_to_float(c);
      const bool saturated_inf = std::isinf(e5m2) && saturate;
      if (!std::isnan(e5m2) && !saturated_inf) {
        EXPECT_EQ(float_to_fp8_e5m2(e5m2, saturate), code) << std::hex << code;
      }
    }
  }
}

TEST(Formats, Tf32RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0x3F801000u))), 0x3F800000u);  // tie, even stays
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0x3F803000u))), 0x3F804000u);  // tie, odd rounds up
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0x3F801001u))), 0x3F802000u);
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0x7F7FFFFFu))), 0x7F800000u);  // FLT_MAX -> Inf
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0x00000FFFu))), 0x00000000u);  // subnormals round too
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0x00001001u))), 0x00002000u);
  EXPECT_EQ(round_to_tf32(-kInf), -kInf);
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0x7F800001u))), 0x7FC00000u);  // sNaN quietened
  EXPECT_EQ(float_bits(round_to_tf32(bits_float(0xFFFFFFFFu))), 0xFFFFE000u);
}

TEST(Formats, ScalarRoundingLandsOnTheGridAndStaysThere) {
  for (Format format : kAllFormats) {
    for (float v : awkward_values()) {
      const float once = round_to_format(format, v);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(once));
        continue;
      }
      EXPECT_EQ(float_bits(round_to_format(format, once)), float_bits(once)) << format_name(format) << " " << v;
      const double max_finite = format_traits(format).max_finite;
      if (std::isfinite(once)) {
        EXPECT_LE(std::fabs(once), max_finite) << format_name(format) << " " << v;
      }
    }
  }
  EXPECT_EQ(round_to_format(Format::FP16, 65520.f), kInf);
  EXPECT_EQ(round_to_format(Format::FP8E4M3FN, 1000.f), 448.f);
  EXPECT_TRUE(std::isnan(round_to_format(Format::FP8E4M3FN, 1000.f, false)));
  EXPECT_EQ(round_to_format(Format::FP8E5M2, -1e9f, false), -kInf);
}

TEST(Formats, BulkPathsGiveTheScalarBits) {
  const std::vector<float> values = awkward_values();
  const int64_t n = static_cast<int64_t>(values.size());
  for (ConversionPath path : usable_paths()) {
    SCOPED_TRACE(std::string(conversion_path_name(path)));
    std::vector<uint16_t> halves(n), bfloats(n);
    floats_to_half(values.data(), halves.data(), n, path);
    floats_to_bfloat16(values.data(), bfloats.data(), n, path);
    std::vector<float> from_halves(n), from_bfloats(n);
    halves_to_float(halves.data(), from_halves.data(), n, path);
    bfloat16s_to_float(bfloats.data(), from_bfloats.data(), n, path);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(halves[i], float_to_half(values[i])) << i;
      EXPECT_EQ(bfloats[i], float_to_bfloat16(values[i])) << i;
      EXPECT_EQ(float_bits(from_halves[i]), float_bits(half_to_float(halves[i]))) << i;
      EXPECT_EQ(float_bits(from_bfloats[i]), float_bits(bfloat16_to_float(bfloats[i]))) << i;
    }
    for (Format format : kAllFormats) {
      for (bool saturate : {true, false}) {
        std::vector<float> rounded = values;
        round_to_format(format, rounded.data(), n, path, saturate);
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(float_bits(rounded[i]), float_bits(round_to_format(format, values[i], saturate)))
              << format_name(format) << " " << i;
      }
    }
  }
}
