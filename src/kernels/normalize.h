// Row math of the normalisations (LayerNormalization, RMSNormalization, InstanceNormalization,
// GroupNormalization, BatchNormalization, LpNormalization), written once for the CPU and CUDA backends.
// Statistics are in compute_t<T> (float for float32/float16/bfloat16, double for float64), as GPU
// runtimes do; each output is rounded once into T.
//
// To add a row functor: define it below and list it in MPA_NORMALIZE_ROW_FUNCTORS.
#pragma once
#include <stdint.h>

#include "kernels/math.h"
#include "tensor/dtype.h"

namespace mpa {

template <class A> struct RowStats {
  A mean;
  A inv_std;  // 1 / sqrt(variance + epsilon)
};

// Mean and 1/sqrt(var + eps) of n contiguous elements: two passes (exact mean first, then squared
// deviations), four interleaved partial sums per pass.
struct MeanInvStdRow {
  template <class T> MPA_HD RowStats<compute_t<T>> operator()(const T* x, int64_t n, compute_t<T> epsilon) const {
    using A = compute_t<T>;
    A s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (int k = 0; k < 4; ++k) s[k] += load(x[i + k]);
    for (; i < n; ++i) s[0] += load(x[i]);
    const A mean = ((s[0] + s[1]) + (s[2] + s[3])) / static_cast<A>(n);
    A q[4] = {0, 0, 0, 0};
    for (i = 0; i + 4 <= n; i += 4)
      for (int k = 0; k < 4; ++k) {
        const A d = load(x[i + k]) - mean;
        q[k] += d * d;
      }
    for (; i < n; ++i) {
      const A d = load(x[i]) - mean;
      q[0] += d * d;
    }
    const A var = ((q[0] + q[1]) + (q[2] + q[3])) / static_cast<A>(n);
    return {mean, A(1) / dmath::sqrt(var + epsilon)};
  }
};

// Mean 0 and 1/sqrt(mean(x^2) + eps): the statistics of RMSNormalization.
struct RmsInvRow {
  template <class T> MPA_HD RowStats<compute_t<T>> operator()(const T* x, int64_t n, compute_t<T> epsilon) const {
    using A = compute_t<T>;
    A q[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (int k = 0; k < 4; ++k) {
        const A v = load(x[i + k]);
        q[k] += v * v;
      }
    for (; i < n; ++i) {
      const A v = load(x[i]);
      q[0] += v * v;
    }
    const A mean_square = ((q[0] + q[1]) + (q[2] + q[3])) / static_cast<A>(n);
    return {A(0), A(1) / dmath::sqrt(mean_square + epsilon)};
  }
};

// y = (x - mean) * inv_std * scale + bias over n contiguous elements. scale/bias advance by their step
// (1: per element, 0: one value for the row); bias may be null.
struct NormalizeAffineRow {
  template <class T>
  MPA_HD void operator()(const T* x, T* y, int64_t n, RowStats<compute_t<T>> stats, const compute_t<T>* scale,
                         int64_t scale_step, const compute_t<T>* bias, int64_t bias_step) const {
    if (bias) {
      for (int64_t i = 0; i < n; ++i)
        y[i] = store<T>((load(x[i]) - stats.mean) * stats.inv_std * scale[i * scale_step] + bias[i * bias_step]);
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = store<T>((load(x[i]) - stats.mean) * stats.inv_std * scale[i * scale_step]);
    }
  }
};

// x / ||x||_p over a strided row (p = 1 or 2; other p by pow), 0 where the norm is 0.
struct LpNormalizeRow {
  template <class T> MPA_HD void operator()(const T* x, T* y, int64_t n, int64_t stride, int64_t p) const {
    using A = compute_t<T>;
    A acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      const A v = dmath::fabs(load(x[i * stride]));
      acc += p == 1 ? v : p == 2 ? v * v : dmath::pow(v, static_cast<A>(p));
    }
    const A norm = p == 1 ? acc : p == 2 ? dmath::sqrt(acc) : dmath::pow(acc, A(1) / static_cast<A>(p));
    for (int64_t i = 0; i < n; ++i) y[i * stride] = store<T>(norm == A(0) ? A(0) : load(x[i * stride]) / norm);
  }
};

#define MPA_NORMALIZE_STATS_FUNCTORS(X) X(MeanInvStdRow) X(RmsInvRow)

}  // namespace mpa
