#include "tensor/formats.h"

#include <algorithm>
#include <cctype>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define MPA_X86_DISPATCH 1
#endif

namespace mpa {

namespace {

// Indexed by Format. Extremes are written as hex floats so they are exact and checkable by eye.
constexpr FormatTraits kTraits[] = {
    {"fp32", 32, 8, 23, 127, 0x1.fffffep127, 0x1p-126, 0x1p-149, true},
    {"fp16", 16, 5, 10, 15, 0x1.ffcp15, 0x1p-14, 0x1p-24, true},
    {"bf16", 16, 8, 7, 127, 0x1.fep127, 0x1p-126, 0x1p-133, true},
    {"fp8e4m3", 8, 4, 3, 7, 0x1.cp8, 0x1p-6, 0x1p-9, false},
    {"fp8e5m2", 8, 5, 2, 15, 0x1.cp15, 0x1p-14, 0x1p-16, true},
    {"tf32", 32, 8, 10, 127, 0x1.ffcp127, 0x1p-126, 0x1p-136, true},
    {"fp64", 64, 11, 52, 1023, 0x1.fffffffffffffp1023, 0x1p-1022, 0x1p-1074, true},
};
static_assert(std::size(kTraits) == std::size(kAllFormats));

struct FormatAlias {
  std::string_view name;
  Format format;
};
constexpr FormatAlias kAliases[] = {{"fp8e4m3fn", Format::FP8E4M3FN},
                                    {"float16", Format::FP16},
                                    {"bfloat16", Format::BF16},
                                    {"float32", Format::FP32},
                                    {"float64", Format::FP64}};

}  // namespace

const FormatTraits& format_traits(Format format) { return kTraits[static_cast<size_t>(format)]; }

std::optional<Format> parse_format(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (Format format : kAllFormats)
    if (format_name(format) == lower) return format;
  for (const FormatAlias& alias : kAliases)
    if (alias.name == lower) return alias.format;
  return std::nullopt;
}

// [SECTION] Bulk conversions

namespace {

// One element loop, compiled once per instruction set: the loop body is the scalar MPA_HD conversion
// (inlined, since a default-target function may be inlined into a wider-target one), so every path
// computes exactly what the scalar code and the CUDA backend compute; GCC vectorises it where it can.
template <class In, class Out, class Convert>
void map_scalar(const In* in, Out* out, int64_t n, Convert convert) {
  for (int64_t i = 0; i < n; ++i) out[i] = convert(in[i]);
}

#ifdef MPA_X86_DISPATCH
template <class In, class Out, class Convert>
__attribute__((target("avx2"))) void map_avx2(const In* in, Out* out, int64_t n, Convert convert) {
  for (int64_t i = 0; i < n; ++i) out[i] = convert(in[i]);
}

template <class In, class Out, class Convert>
__attribute__((target("avx512f"))) void map_avx512(const In* in, Out* out, int64_t n, Convert convert) {
  for (int64_t i = 0; i < n; ++i) out[i] = convert(in[i]);
}

// FP16 uses the F16C instructions: the scalar float_to_half is too branchy to vectorise, and F16C is
// the documented bit-exact equal of CUDA's __float2half_rn (except NaN payloads, where the scalar code
// follows F16C). Tails go through the scalar code, which the exhaustive test proves identical.
constexpr int kF16cRounding = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__attribute__((target("avx2,f16c"))) void floats_to_half_f16c(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i low = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kF16cRounding);
    const __m128i high = _mm256_cvtps_ph(_mm256_loadu_ps(in + i + 8), kF16cRounding);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), low);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 8), high);
  }
  for (; i < n; ++i) out[i] = float_to_half(in[i]);
}

__attribute__((target("avx2,f16c"))) void halves_to_float_f16c(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 8));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(low));
    _mm256_storeu_ps(out + i + 8, _mm256_cvtph_ps(high));
  }
  for (; i < n; ++i) out[i] = half_to_float(in[i]);
}

__attribute__((target("avx2,f16c"))) void round_to_half_f16c(float* data, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i low = _mm256_cvtps_ph(_mm256_loadu_ps(data + i), kF16cRounding);
    const __m128i high = _mm256_cvtps_ph(_mm256_loadu_ps(data + i + 8), kF16cRounding);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(low));
    _mm256_storeu_ps(data + i + 8, _mm256_cvtph_ps(high));
  }
  for (; i < n; ++i) data[i] = half_to_float(float_to_half(data[i]));
}

// F16C read from CPUID (leaf 1, ECX): clang 14's __builtin_cpu_supports (the fuzz build) does not know the name.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

ConversionPath detect_conversion_path() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && cpu_has_f16c()) return ConversionPath::Avx512;
  if (__builtin_cpu_supports("avx2") && cpu_has_f16c()) return ConversionPath::Avx2;
  return ConversionPath::Scalar;
}
#else
ConversionPath detect_conversion_path() { return ConversionPath::Scalar; }
#endif

ConversionPath usable(ConversionPath requested) { return std::min(requested, best_conversion_path()); }

// Runs the scalar conversion on the widest usable instruction set.
template <class In, class Out, class Convert>
void map_dispatched(const In* in, Out* out, int64_t n, ConversionPath path, Convert convert) {
  switch (usable(path)) {
#ifdef MPA_X86_DISPATCH
    case ConversionPath::Avx512: return map_avx512(in, out, n, convert);
    case ConversionPath::Avx2: return map_avx2(in, out, n, convert);
#endif
    default: return map_scalar(in, out, n, convert);
  }
}

}  // namespace

ConversionPath best_conversion_path() {
  static const ConversionPath best = detect_conversion_path();
  return best;
}

std::string_view conversion_path_name(ConversionPath path) {
  switch (path) {
    case ConversionPath::Scalar: return "scalar";
    case ConversionPath::Avx2: return "avx2+f16c";
    case ConversionPath::Avx512: return "avx512f";
  }
  return "unknown";
}

void floats_to_half(const float* in, uint16_t* out, int64_t n, ConversionPath path) {
#ifdef MPA_X86_DISPATCH
  if (usable(path) != ConversionPath::Scalar) return floats_to_half_f16c(in, out, n);
#endif
  map_scalar(in, out, n, [](float v) { return float_to_half(v); });
}

void halves_to_float(const uint16_t* in, float* out, int64_t n, ConversionPath path) {
#ifdef MPA_X86_DISPATCH
  if (usable(path) != ConversionPath::Scalar) return halves_to_float_f16c(in, out, n);
#endif
  map_scalar(in, out, n, [](uint16_t h) { return half_to_float(h); });
}

void floats_to_bfloat16(const float* in, uint16_t* out, int64_t n, ConversionPath path) {
  map_dispatched(in, out, n, path, [](float v) { return float_to_bfloat16(v); });
}

void bfloat16s_to_float(const uint16_t* in, float* out, int64_t n, ConversionPath path) {
  map_dispatched(in, out, n, path, [](uint16_t b) { return bfloat16_to_float(b); });
}

void round_to_format(Format format, float* data, int64_t n, ConversionPath path, bool fp8_saturate) {
  switch (format) {
    case Format::FP32:
    case Format::FP64: return;
    case Format::FP16:
#ifdef MPA_X86_DISPATCH
      if (usable(path) != ConversionPath::Scalar) return round_to_half_f16c(data, n);
#endif
      return map_scalar(data, data, n, [](float v) { return half_to_float(float_to_half(v)); });
    case Format::BF16:
      return map_dispatched(data, data, n, path, [](float v) { return bfloat16_to_float(float_to_bfloat16(v)); });
    case Format::TF32: return map_dispatched(data, data, n, path, [](float v) { return round_to_tf32(v); });
    case Format::FP8E4M3FN:
      return map_dispatched(data, data, n, path, [fp8_saturate](float v) {
        return fp8_e4m3fn_to_float(float_to_fp8_e4m3fn(v, fp8_saturate));
      });
    case Format::FP8E5M2:
      return map_dispatched(data, data, n, path,
                            [fp8_saturate](float v) { return fp8_e5m2_to_float(float_to_fp8_e5m2(v, fp8_saturate)); });
  }
}

void round_to_format_scaled(Format format, float* data, int64_t n, float scale) {
  if (scale == 1.f || format == Format::FP32 || format == Format::FP64) return round_to_format(format, data, n);
  for (int64_t i = 0; i < n; ++i) data[i] /= scale;
  round_to_format(format, data, n);
  for (int64_t i = 0; i < n; ++i) data[i] *= scale;
}

}  // namespace mpa
