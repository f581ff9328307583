#include "tensor/format_storage.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/dispatch.h"

namespace mpa {

namespace {

// double -> float rounded to odd: truncated, then the last bit set when anything was cut off. Rounding
// that float to nearest-even in a format of at most 22 significant bits gives the double's correctly
// rounded value (round-to-odd keeps the sticky information that a plain double -> float rounding loses,
// which could otherwise make a tie of the format out of a value just off one).
float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || std::isnan(d)) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.f);
  return __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, f) | 1u);
}

}  // namespace

void store_span_in_format(const Tensor& tensor, int64_t begin, int64_t end, float* out, Format format,
                          double scale) {
  const int64_t n = end - begin;
  if (tensor.dtype() == DType::Float32) {
    std::memcpy(out, tensor.data<float>() + begin, static_cast<size_t>(n) * sizeof(float));
  } else if (tensor.dtype() == DType::Float64 && scale == 1 && format != Format::FP32 && format != Format::FP64) {
    const double* in = tensor.data<double>() + begin;
    for (int64_t i = 0; i < n; ++i) out[i] = round_to_odd_float(in[i]);
  } else {
    visit_float(tensor.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = static_cast<const T*>(tensor.raw()) + begin;
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(load(in[i]));
    });
    if (tensor.dtype() != DType::Float64) return;
  }
  round_to_format_scaled(format, out, n, static_cast<float>(scale));
}

bool holds_in_format(const Tensor& stored, const Tensor& reference, Format format, double scale) {
  if (stored.dtype() != DType::Float32 || stored.numel() != reference.numel()) return false;
  constexpr int64_t kBlock = 4096;
  float block[kBlock];
  const float* s = stored.data<float>();
  for (int64_t begin = 0; begin < reference.numel(); begin += kBlock) {
    const int64_t end = std::min(reference.numel(), begin + kBlock);
    store_span_in_format(reference, begin, end, block, format, scale);
    if (std::memcmp(block, s + begin, static_cast<size_t>(end - begin) * sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace mpa
