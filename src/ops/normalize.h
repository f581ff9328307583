// Host-side pieces the normalisation ops share: parameter tensors (scale, bias, mean, var) read once into
// the compute type, and the per-(instance, channel group) loop that InstanceNormalization,
// GroupNormalization and BatchNormalization run over NC[spatial] tensors. Row math: src/kernels/normalize.h.
#pragma once
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cpu/elementwise.h"
#include "common/parallel.h"
#include "kernels/normalize.h"
#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace mpa {

// Every element of a floating-point tensor, converted to A.
// BatchNormalization's view of x [N, C, D1...] as [N, C, S] (spatial=0, opsets 1-7: one statistic per
// activation, [N, C * S, 1]), every parameter holding C elements; fails naming the node.
struct ChannelSplit {
  int64_t N = 0, C = 0, S = 0;
};
inline ChannelSplit batch_norm_channels(const std::string& who, const Tensor& x, bool spatial,
                                        std::initializer_list<const Tensor*> params) {
  if (!(x.rank() >= 2)) fail(who + ": input must have rank >= 2 (N, C, ...), got " + shape_str(x.shape()));
  ChannelSplit split{x.dim(0), x.dim(1), 0};
  split.S = x.numel() / std::max<int64_t>(split.N * split.C, 1);
  if (!spatial) {
    split.C *= split.S;
    split.S = 1;
  }
  for (const Tensor* t : params)
    if (!(t->numel() == split.C))
      fail(who + ": scale, B, mean and var must have " + std::to_string(split.C) + " elements, got " +
           shape_str(t->shape()));
  return split;
}

// LayerNormalization / RMSNormalization's view of x as [rows, n], n = prod(shape[axis:]) (axis normalised);
// norm_shape = shape[axis:], stat_shape = shape[:axis] + [1] * (rank - axis).
struct TrailingSplit {
  int64_t rows = 1, n = 1;
  Shape norm_shape, stat_shape;
};
inline TrailingSplit trailing_split(const Shape& shape, int64_t axis) {
  TrailingSplit split;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (static_cast<int64_t>(i) < axis) {
      split.rows *= d;
      split.stat_shape.push_back(d);
    } else {
      split.n *= d;
      split.norm_shape.push_back(d);
      split.stat_shape.push_back(1);
    }
  }
  return split;
}

template <class A> std::vector<A> param_vector(const Tensor& t, const std::string& who) {
  std::vector<A> out(static_cast<size_t>(t.numel()));
  if (!dtype_is_float(t.dtype())) fail(who + ": expects a floating-point parameter tensor, got " + dtype_name(t.dtype()));
  visit_float(t.dtype(), [&](auto tag) {
    using P = typename decltype(tag)::type;
    const P* p = t.data<P>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<A>(load(p[i]));
  });
  return out;
}

// A parameter broadcast (numpy rules, one-directional) to `target`, flattened row-major.
template <class A> std::vector<A> param_expanded(const Tensor& t, const Shape& target, const std::string& who,
                                                 const std::string& what) {
  std::vector<A> values = param_vector<A>(t, who);
  const int64_t count = shape_numel(target);
  if (t.numel() == count && (t.rank() <= static_cast<int>(target.size()))) {
    bool same = true;
    for (int i = 0; i < t.rank(); ++i) same = same && t.dim(i) == target[target.size() - t.shape().size() + i];
    if (same) return values;
  }
  const size_t rank = target.size();
  bool ok = t.shape().size() <= rank;
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = t.shape().size(); ok && i-- > 0;) {
    const size_t o = rank - t.shape().size() + i;
    const int64_t d = t.shape()[i];
    ok = d == target[o] || d == 1;
    strides[o] = d == 1 ? 0 : stride;
    stride *= d;
  }
  if (!ok) fail(who + ": " + what + " of shape " + shape_str(t.shape()) + " does not broadcast to " + shape_str(target));
  std::vector<A> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      offset += (rem % target[d]) * strides[d];
      rem /= target[d];
    }
    out[static_cast<size_t>(i)] = values[static_cast<size_t>(offset)];
  }
  return out;
}

// The fused normalisations (SkipLayerNormalization, EmbedLayerNormalization) normalise a sum they form
// themselves: the sum stays in the compute type, unrounded, as onnxruntime's CPU kernels keep it. `row` holds
// it (n values) and is overwritten with the normalised values, which are stored into `out` once.
template <class Stats, class T>
RowStats<compute_t<T>> normalize_sum_row(compute_t<T>* row, T* out, int64_t n, compute_t<T> epsilon,
                                         const compute_t<T>* scale, const compute_t<T>* bias) {
  const RowStats<compute_t<T>> stats = Stats{}(row, n, epsilon);
  NormalizeAffineRow{}(row, row, n, stats, scale, 1, bias, 1);
  for (int64_t i = 0; i < n; ++i) out[i] = store<T>(row[i]);
  return stats;
}

// Channels [first, first + count) of x and y (S values each), normalised with one group's statistics and
// each channel's scale and bias.
template <class T>
__attribute__((always_inline)) inline void normalize_group_channels(const T* x, T* y, int64_t first, int64_t count,
                                                                    int64_t S, RowStats<compute_t<T>> stats,
                                                                    const compute_t<T>* scale,
                                                                    const compute_t<T>* bias) {
  for (int64_t c = first; c < first + count; ++c)
    NormalizeAffineRow{}(x + (c - first) * S, y + (c - first) * S, S, stats, scale + c, 0, bias ? bias + c : nullptr,
                         0);
}

#if MPA_AVX2_DISPATCH
// The same compiled for AVX2, as the elementwise loops (backends/cpu/elementwise.h): 8 lanes instead of 4.
template <class T>
__attribute__((target("avx2,fma"))) void normalize_group_channels_avx2(const T* x, T* y, int64_t first, int64_t count,
                                                                       int64_t S, RowStats<compute_t<T>> stats,
                                                                       const compute_t<T>* scale,
                                                                       const compute_t<T>* bias) {
  normalize_group_channels(x, y, first, count, S, stats, scale, bias);
}
#endif

// normalize_group_channels on the calling thread, compiled for AVX2 where the CPU has it (also a
// BatchNormalization epilogue's, ops/batch_norm.cpp).
template <class T>
void normalize_channels(const T* x, T* y, int64_t first, int64_t count, int64_t S, RowStats<compute_t<T>> stats,
                        const compute_t<T>* scale, const compute_t<T>* bias) {
#if MPA_AVX2_DISPATCH
  if (cpu::cpu_has_avx2()) return normalize_group_channels_avx2(x, y, first, count, S, stats, scale, bias);
#endif
  normalize_group_channels(x, y, first, count, S, stats, scale, bias);
}

// x viewed as [N, C, S]: channels split into `groups` contiguous groups whose statistics come from
// stats(n, g, group_row, group_len) -> RowStats; each channel c is then normalised with scale[c], bias[c].
template <class T, class Stats>
void normalize_channel_groups(const T* x, T* y, int64_t N, int64_t C, int64_t S, int64_t groups,
                              const compute_t<T>* scale, const compute_t<T>* bias, Stats&& stats) {
  if (N * C * S == 0) return;  // nothing to normalise (and no group to divide the channels into)
  const int64_t per_group = C / groups, group_len = per_group * S;
  parallel_for(N * groups, std::max<int64_t>(1, 16384 / std::max<int64_t>(group_len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / groups, g = r % groups;
      const T* xg = x + r * group_len;
      normalize_channels(xg, y + r * group_len, g * per_group, per_group, S, stats(n, g, xg, group_len), scale, bias);
    }
  });
}

}  // namespace mpa
