#include "runtime/precision.h"

#include "backends/cpu/parallel.h"

namespace mpa {

namespace {
constexpr int64_t kGrain = 1 << 15;
}

void round_tensor_to_format(Tensor& tensor, Format format) {
  if (tensor.dtype() != DType::Float32 || format == Format::FP32 || format == Format::FP64) return;
  float* data = tensor.data<float>();
  cpu::parallel_for(tensor.numel(), kGrain,
                    [&](int64_t begin, int64_t end) { round_to_format(format, data + begin, end - begin); });
}

Tensor tensor_in_format(const Tensor& tensor, Format format) {
  if (tensor.dtype() == DType::Float64) {
    Tensor out(DType::Float32, tensor.shape());
    const double* in = tensor.data<double>();
    float* o = out.data<float>();
    cpu::parallel_for(out.numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = static_cast<float>(in[i]);
      round_to_format(format, o + begin, end - begin);
    });
    return out;
  }
  if (tensor.dtype() != DType::Float32 || format == Format::FP32 || format == Format::FP64) return tensor;
  Tensor out = tensor.clone();
  round_tensor_to_format(out, format);
  return out;
}

Tensor widen_to_double(const Tensor& tensor) {
  if (tensor.dtype() != DType::Float32) return tensor;
  Tensor out(DType::Float64, tensor.shape());
  const float* in = tensor.data<float>();
  double* o = out.data<double>();
  cpu::parallel_for(out.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = in[i];
  });
  return out;
}

}  // namespace mpa
