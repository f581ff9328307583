#include "backends/cpu/format_rounding.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "common/parallel.h"
#include "tensor/dispatch.h"
#include "tensor/format_storage.h"

namespace mpa::cpu {

namespace {
constexpr int64_t kGrain = 1 << 15;
constexpr int64_t kBlock = 1 << 12;  // floats per cache-resident block (16 KiB)

// Whether rounding a float32 tensor onto the format's grid would leave every element's bits unchanged.
bool on_format_grid(const Tensor& tensor, Format format, double scale) {
  const float* data = tensor.data<float>();
  const float s = static_cast<float>(scale);
  std::atomic<bool> on_grid{true};
  parallel_for(tensor.numel(), kGrain, [&](int64_t begin, int64_t end) {
    float rounded[kBlock];
    for (int64_t block = begin; block < end && on_grid; block += kBlock) {
      const int64_t n = std::min(kBlock, end - block);
      std::memcpy(rounded, data + block, static_cast<size_t>(n) * sizeof(float));
      round_to_format_scaled(format, rounded, n, s);
      if (std::memcmp(rounded, data + block, static_cast<size_t>(n) * sizeof(float)) != 0) on_grid = false;
    }
  });
  return on_grid;
}

}  // namespace

void round_tensor_to_format(Tensor& tensor, Format format, double scale) {
  // float64 values are stored in the format too (as float32 on its grid), as tensor_in_format stores
  // them: a target run holds no double beside the narrowed initializers and inputs it combines them with.
  if (tensor.dtype() == DType::Float64 && format != Format::FP64) return void(tensor = tensor_in_format(tensor, format, scale));
  if (tensor.dtype() != DType::Float32 || format == Format::FP32 || format == Format::FP64) return;
  // Never round storage that others read: a Constant node hands out its value, Reshape a view of its input
  // (whose values, in a target run, are on the grid already: then there is nothing to round or copy).
  if (tensor.storage_shared()) {
    if (!on_format_grid(tensor, format, scale)) tensor = tensor_in_format(tensor, format, scale);
    return;
  }
  float* data = tensor.data<float>();
  const float s = static_cast<float>(scale);
  parallel_for(tensor.numel(), kGrain,
                    [&](int64_t begin, int64_t end) { round_to_format_scaled(format, data + begin, end - begin, s); });
}

double absmax_of(const Tensor& tensor) {
  if (!dtype_is_float(tensor.dtype())) return 0;
  double absmax = 0;
  visit_float(tensor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(tensor.raw());
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      const double a = std::fabs(static_cast<double>(load(p[i])));
      if (std::isfinite(a)) absmax = std::max(absmax, a);
    }
  });
  return absmax;
}



Tensor tensor_in_format(const Tensor& tensor, Format format, double scale) {
  const bool float32 = tensor.dtype() == DType::Float32;
  if (!(tensor.dtype() == DType::Float64 || (float32 && format != Format::FP32 && format != Format::FP64)))
    return tensor;
  // Copy and round block by block, so each block is rounded while still in cache (and copied in parallel).
  Tensor out(DType::Float32, tensor.shape());
  float* o = out.data<float>();
  parallel_for(out.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; block += kBlock)
      store_span_in_format(tensor, block, std::min(end, block + kBlock), o + block, format, scale);
  });
  return out;
}

Tensor widen_to_double(const Tensor& tensor) {
  if (tensor.dtype() != DType::Float32) return tensor;
  Tensor out(DType::Float64, tensor.shape());
  const float* in = tensor.data<float>();
  double* o = out.data<double>();
  parallel_for(out.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = in[i];
  });
  return out;
}

}  // namespace mpa::cpu
