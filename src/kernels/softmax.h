// Softmax, LogSoftmax and Hardmax over one row, written once for the CPU and CUDA backends. A row is n
// elements `stride` apart. Math is in compute_t<T> (float for float32/float16/bfloat16, double for
// float64), the result is rounded once into T.
//
//   operator()(x, y, n, stride, tmp)   tmp: optional scratch of n compute_t<T> values (contiguous) that
//                                      keeps exp(x - max) between passes; nullptr recomputes it.
//
// Softmax: float max subtraction, exp, sum, divide (as GPU runtimes do); a row of only -inf gives NaN.
// To add a row functor: define it below and list it in MPA_SOFTMAX_ROW_FUNCTORS.
#pragma once
#include <stdint.h>

#include "kernels/math.h"
#include "tensor/dtype.h"

namespace mpa {

template <class T> MPA_HD compute_t<T> row_max(const T* x, int64_t n, int64_t stride) {
  using A = compute_t<T>;
  A m = -static_cast<A>(INFINITY);
  for (int64_t i = 0; i < n; ++i) {
    const A v = load(x[i * stride]);
    m = (v > m || v != v) ? v : m;
  }
  return m;
}

// Sum of exp(x - m), keeping the exponentials in tmp when given.
template <class T> MPA_HD compute_t<T> row_exp_sum(const T* x, int64_t n, int64_t stride, compute_t<T> m,
                                                   compute_t<T>* tmp) {
  using A = compute_t<T>;
  A sum = 0;
  if (tmp) {
    for (int64_t i = 0; i < n; ++i) {
      const A e = dmath::exp(load(x[i * stride]) - m);
      tmp[i] = e;
      sum += e;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) sum += dmath::exp(load(x[i * stride]) - m);
  }
  return sum;
}

struct SoftmaxRow {
  template <class T> MPA_HD void operator()(const T* x, T* y, int64_t n, int64_t stride, compute_t<T>* tmp) const {
    using A = compute_t<T>;
    const A m = row_max(x, n, stride);
    const A sum = row_exp_sum(x, n, stride, m, tmp);
    if (tmp) {
      for (int64_t i = 0; i < n; ++i) y[i * stride] = store<T>(tmp[i] / sum);
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * stride] = store<T>(dmath::exp(load(x[i * stride]) - m) / sum);
    }
  }
};

struct LogSoftmaxRow {
  template <class T> MPA_HD void operator()(const T* x, T* y, int64_t n, int64_t stride, compute_t<T>*) const {
    using A = compute_t<T>;
    const A m = row_max(x, n, stride);
    const A log_sum = dmath::log(row_exp_sum<T>(x, n, stride, m, nullptr));
    for (int64_t i = 0; i < n; ++i) y[i * stride] = store<T>((load(x[i * stride]) - m) - log_sum);
  }
};

// 1 at the first maximum of the row, 0 elsewhere.
struct HardmaxRow {
  template <class T> MPA_HD void operator()(const T* x, T* y, int64_t n, int64_t stride, compute_t<T>*) const {
    using A = compute_t<T>;
    int64_t best = 0;
    A m = n > 0 ? load(x[0]) : A(0);
    for (int64_t i = 1; i < n; ++i) {
      const A v = load(x[i * stride]);
      if (v > m) {
        m = v;
        best = i;
      }
    }
    for (int64_t i = 0; i < n; ++i) y[i * stride] = store<T>(i == best ? A(1) : A(0));
  }
};

#define MPA_SOFTMAX_ROW_FUNCTORS(X) X(SoftmaxRow) X(LogSoftmaxRow) X(HardmaxRow)

}  // namespace mpa
