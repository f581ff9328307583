// Helpers for the compute-heavy ops (Conv, Gemm, MatMul, pools, Resize, Einsum): they work on contiguous
// arrays of the accumulation type (float for float32/float16/bfloat16 storage, double for float64, the
// integer itself for integer MatMul). Storage that already is the accumulation type is used in place;
// 16-bit floats are widened once (exactly) and results rounded once on the way out.
#pragma once
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/gemm.h"
#include "common/parallel.h"
#include "ops/op.h"
#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace mpa {

// Accumulation type of storage type T.
template <class T> using acc_t = std::conditional_t<std::is_integral_v<T>, T, compute_t<T>>;

// Per-thread scratch that keeps its capacity between calls, so large im2col/conversion buffers are not
// re-faulted on every node. Slots keep simultaneous buffers of one type apart.
template <class T> T* scratch(int slot, size_t count) {
  thread_local std::vector<T> buffers[4];
  std::vector<T>& b = buffers[slot];
  if (b.size() < count) b.resize(count);
  return b.data();
}

// Converts count elements of storage type T to Acc, in parallel.
template <class T, class Acc> void widen(const T* in, Acc* out, int64_t count) {
  parallel_for(count, 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = static_cast<Acc>(load(in[i]));
  });
}
template <class T, class Acc> void narrow(const Acc* in, T* out, int64_t count) {
  parallel_for(count, 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = store<T>(static_cast<compute_t<T>>(in[i]));
  });
}

// The tensor's elements as a contiguous Acc array: in place when the types agree, else widened into
// `holder`.
template <class T, class Acc = acc_t<T>> const Acc* as_acc(const Tensor& t, std::vector<Acc>& holder) {
  if constexpr (std::is_same_v<T, Acc>) {
    return t.data<T>();
  } else {
    holder.resize(static_cast<size_t>(t.numel()));
    widen(t.data<T>(), holder.data(), t.numel());
    return holder.data();
  }
}

// An output written as Acc: points straight into the tensor when the types agree, else into a buffer
// that finish() rounds into the tensor.
template <class T, class Acc = acc_t<T>> class AccOutput {
 public:
  explicit AccOutput(Tensor& out) : out_(out) {
    if constexpr (!std::is_same_v<T, Acc>) buffer_.resize(static_cast<size_t>(out.numel()));
  }
  Acc* data() {
    if constexpr (std::is_same_v<T, Acc>) return out_.data<T>();
    else return buffer_.data();
  }
  void finish() {
    if constexpr (!std::is_same_v<T, Acc>) narrow(buffer_.data(), out_.data<T>(), out_.numel());
  }

 private:
  Tensor& out_;
  std::vector<Acc> buffer_;
};

// How a GEMM-based op (MatMul, Gemm, Conv, ConvTranspose, Einsum) on `dtype` computes under `config`:
// fp16 accumulation needs a 16-bit grid to round onto (FP16 or BF16 values), TF32 operands the flag.
inline cpu::GemmMath gemm_math(const ExecConfig& config, DType dtype) {
  const Format values = value_format(config, dtype);
  const bool half_accumulator =
      config.accumulation == Accumulation::FP16 && (values == Format::FP16 || values == Format::BF16);
  return {half_accumulator ? values : Format::FP32, config.tf32_gemm_inputs};
}

// The element types GEMM-based ops take: the four float types and 32/64-bit integers.
template <class F> decltype(auto) visit_gemm_types(DType t, const std::string& label, F&& f) {
  switch (t) {
    case DType::Int32: return f(TypeTag<int32_t>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::UInt32: return f(TypeTag<uint32_t>{});
    case DType::UInt64: return f(TypeTag<uint64_t>{});
    case DType::Float32: case DType::Float64: case DType::Float16: case DType::BFloat16:
      return visit_float(t, std::forward<F>(f));
    default: fail_element_type(t, label + ": element type " + dtype_name(t) + " is not allowed for this op");
  }
}

}  // namespace mpa
