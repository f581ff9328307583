// Softmax, LogSoftmax and Hardmax over one row, written once for the CPU and CUDA backends. A row is n
// elements `stride` apart. Math is in compute_t<T> (float for float32/float16/bfloat16, double for
// float64), the result is rounded once into T.
//
//   operator()(x, y, n, stride, tmp)   tmp: optional scratch of n compute_t<T> values (contiguous) that
//                                      keeps exp(x - max) between passes; nullptr recomputes it.
//
// Softmax: float max subtraction, exp, sum, divide (as GPU runtimes do); a row of only -inf gives NaN.
// exp is fast_exp below for float (vectorisable, about 1 ulp), libm for double.
// To add a row functor: define it below and list it in MPA_SOFTMAX_ROW_FUNCTORS.
#pragma once
#include <stdint.h>

#include "kernels/math.h"
#include "tensor/float16.h"
#include "tensor/dtype.h"

namespace mpa {

// exp(x) in float without a library call or branches, so CPU loops vectorise and both backends get the
// same bits: Cody-Waite reduction x = n ln2 + r, Cephes' degree-6 polynomial for exp(r) (max error about
// 1 ulp), 2^n applied in two halves so n = 128 does not overflow the exponent. exp(x) = 0 below -87.34
// (the float subnormal range is dropped), +inf above 88.72, NaN stays NaN. Double uses libm.
MPA_HD float fast_exp(float x) {
  const float clamped = x < -87.3365447f ? -87.3365447f : (x > 88.7228394f ? 88.7228394f : x);
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (clamped * 1.44269504088896341f + shifter) - shifter;
  const float r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni / 2;
  const float scale1 = bits_float(static_cast<uint32_t>(half + 127) << 23);
  const float scale2 = bits_float(static_cast<uint32_t>(ni - half + 127) << 23);
  float result = e * scale1 * scale2;
  result = x < -87.3365447f ? 0.0f : result;
  result = x > 88.7228394f ? static_cast<float>(INFINITY) : result;
  return x != x ? x : result;
}
MPA_HD double fast_exp(double x) { return dmath::exp(x); }

constexpr int kSoftmaxLanes = 8;  // independent partial max/sum chains (vectorise on the CPU)

// Row maximum ignoring NaN (a NaN then turns every exp(x - max) and so the whole row into NaN anyway);
// branch-free so it vectorises.
template <class T> MPA_HD compute_t<T> row_max(const T* x, int64_t n, int64_t stride) {
  using A = compute_t<T>;
  A m[kSoftmaxLanes];
  for (int k = 0; k < kSoftmaxLanes; ++k) m[k] = -static_cast<A>(INFINITY);
  int64_t i = 0;
  for (; i + kSoftmaxLanes <= n; i += kSoftmaxLanes)
    for (int k = 0; k < kSoftmaxLanes; ++k) {
      const A v = load(x[(i + k) * stride]);
      m[k] = v > m[k] ? v : m[k];
    }
  for (int k = 0; i < n; ++i, ++k) {
    const A v = load(x[i * stride]);
    m[k] = v > m[k] ? v : m[k];
  }
  for (int k = 1; k < kSoftmaxLanes; ++k) m[0] = m[k] > m[0] ? m[k] : m[0];
  return m[0];
}

// Sum of n contiguous values in kSoftmaxLanes interleaved partial sums.
template <class A> MPA_HD A lane_sum(const A* v, int64_t n) {
  A s[kSoftmaxLanes];
  for (int k = 0; k < kSoftmaxLanes; ++k) s[k] = A(0);
  int64_t i = 0;
  for (; i + kSoftmaxLanes <= n; i += kSoftmaxLanes)
    for (int k = 0; k < kSoftmaxLanes; ++k) s[k] += v[i + k];
  for (int k = 0; i < n; ++i, ++k) s[k] += v[i];
  for (int width = kSoftmaxLanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) s[k] += s[k + width];
  return s[0];
}

// Sum of exp(x - m), keeping the exponentials in tmp when given (a separate exp loop vectorises).
template <class T> MPA_HD compute_t<T> row_exp_sum(const T* x, int64_t n, int64_t stride, compute_t<T> m,
                                                   compute_t<T>* tmp) {
  using A = compute_t<T>;
  if (tmp) {
    for (int64_t i = 0; i < n; ++i) tmp[i] = fast_exp(static_cast<A>(load(x[i * stride]) - m));
    return lane_sum(tmp, n);
  }
  A s[kSoftmaxLanes];
  for (int k = 0; k < kSoftmaxLanes; ++k) s[k] = A(0);
  int64_t i = 0;
  for (; i + kSoftmaxLanes <= n; i += kSoftmaxLanes)
    for (int k = 0; k < kSoftmaxLanes; ++k) s[k] += fast_exp(static_cast<A>(load(x[(i + k) * stride]) - m));
  for (int k = 0; i < n; ++i, ++k) s[k] += fast_exp(static_cast<A>(load(x[i * stride]) - m));
  for (int width = kSoftmaxLanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) s[k] += s[k + width];
  return s[0];
}

struct SoftmaxRow {
  template <class T> MPA_HD void operator()(const T* x, T* y, int64_t n, int64_t stride, compute_t<T>* tmp) const {
    using A = compute_t<T>;
    const A m = row_max(x, n, stride);
    const A sum = row_exp_sum(x, n, stride, m, tmp);
    if (tmp) {
      for (int64_t i = 0; i < n; ++i) y[i * stride] = store<T>(tmp[i] / sum);
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * stride] = store<T>(fast_exp(static_cast<A>(load(x[i * stride]) - m)) / sum);
    }
  }
};

struct LogSoftmaxRow {
  template <class T> MPA_HD void operator()(const T* x, T* y, int64_t n, int64_t stride, compute_t<T>* tmp) const {
    using A = compute_t<T>;
    const A m = row_max(x, n, stride);
    const A log_sum = dmath::log(row_exp_sum<T>(x, n, stride, m, tmp));
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
