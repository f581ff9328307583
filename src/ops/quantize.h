// Shared by the quantization ops (QuantizeLinear, DequantizeLinear, QLinearMatMul, QLinearConv...): which
// scale and zero point an element uses, and arithmetic rounded the way ONNX's reference rounds it.
#pragma once
#include <cmath>
#include <string>
#include <type_traits>

#include "common/parallel.h"
#include "ops/op.h"
#include "tensor/narrow.h"

namespace mpa {

// v rounded onto float type t (float64: as it is). Arithmetic "in float16" is done in double and rounded
// once: exact, as double holds more than twice the digits of every float type here.
double round_to_float_type(DType t, double v);

// The float type numpy computes `a op b` in (the reference's type promotion between float operands).
DType promoted_float_type(DType a, DType b);

// Which entry of a scale / zero point each element of x uses: per tensor (one value), per axis (a 1-D
// tensor along `axis`) or blocked (x's shape with the axis cut in blocks of block_size). Checks the
// shapes, failing naming the node.
class QuantGrid {
 public:
  QuantGrid(const std::string& who, const Shape& x_shape, const Tensor& scale, const Tensor* zero_point, int64_t axis,
            int64_t block_size);
  int64_t index(int64_t i) const {
    if (per_tensor_) return 0;
    const int64_t a = (i / inner_) % axis_dim_;
    if (block_ == 0) return a;
    return ((i / (inner_ * axis_dim_)) * blocks_ + a / block_) * inner_ + i % inner_;
  }

 private:
  bool per_tensor_ = true;
  int64_t axis_dim_ = 1, inner_ = 1, block_ = 0, blocks_ = 1;
};

// An integer result of quantization: v rounded to nearest even, plus the zero point, saturated to
// [lo, hi]; NaN gives lo (the reference's int32 conversion gives INT32_MIN, then clips).
inline int64_t saturate_rounded(double v, double zero_point, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return lo;
  const double r = std::nearbyint(v) + zero_point;
  return r <= static_cast<double>(lo) ? lo : r >= static_cast<double>(hi) ? hi : static_cast<int64_t>(r);
}

// Writes f(i), an integer in the range of y's integer type (narrow or not), to every element of y.
template <class F>
void write_integers(Tensor& y, const std::string& who, F&& f) {
  const int64_t n = y.numel();
  if (dtype_is_narrow(y.dtype())) {  // in range, so the byte is already the sign-extended element
    uint8_t* out = static_cast<uint8_t*>(y.raw());
    parallel_for(n, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = static_cast<uint8_t>(static_cast<int8_t>(f(i)));
    });
    return;
  }
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T* out = y.data<T>();
      parallel_for(n, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = static_cast<T>(f(i));
      });
    } else {
      fail(who + ": output type " + dtype_name(y.dtype()) + " is not an integer type");
    }
  });
}

}  // namespace mpa
