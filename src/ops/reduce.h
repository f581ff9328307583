// The reduction machinery every reducing op shares (Reduce*, MeanVarianceNormalization, BatchNormalization
// statistics): axis normalisation, the geometry of a reduction over any axes set, and the CPU loops that run
// an accumulator functor from src/kernels/reduce.h over it.
//
// Geometry: size-1 dims are dropped and neighbouring dims that are both kept or both reduced are merged.
// One reduced block leaves the (outer, reduced, inner) form, the fast path; anything else (e.g. axes {0, 2}
// of NCHW) is the general form: per output element, a table of reduced-block offsets and a contiguous or
// strided innermost run.
//
// Determinism: the order in which elements are combined depends only on the shape, never on the number of
// threads (fixed lane count, fixed chunk size, chunks merged in order).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/compiler.h"
#include "common/parallel.h"
#include "tensor/tensor.h"

namespace mpa {

// axis in [-rank, rank) to [0, rank); fails naming `who` otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& who);
// Sorted, deduplicated, each normalised with normalize_axis.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const std::string& who);

// (outer, n, inner) around one axis: the shape is [outer, n, inner] in row-major order.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at_axis(const Shape& shape, int64_t axis);
// The rows of the softmax family (Softmax, LogSoftmax, Hardmax): around `axis` (opset 13 on), or of the
// tensor coerced to 2-D at `axis` (before), where n counts everything from the axis on and inner is 1.
AxisSplit softmax_rows_of(const Shape& shape, int64_t axis, bool coerce_2d, const std::string& who);

class KernelContext;
// The axes a Reduce* node reduces over: the 'axes' attribute, or from `axes_from_input` on its optional
// int64 input 1 (a host input); none given means all, unless noop_with_empty_axes. Normalised and sorted.
std::vector<int64_t> reduce_axes(const KernelContext& ctx, int64_t rank, bool axes_from_input,
                                 bool noop_with_empty_axes, const std::vector<int64_t>& attr_axes);

class ReducePlan {
 public:
  // axes: already normalised; empty means "reduce nothing" (each element is its own set).
  ReducePlan(const Shape& in, const std::vector<int64_t>& axes, bool keepdims);

  const Shape& out_shape() const { return out_shape_; }
  const Shape& kept_shape() const { return kept_shape_; }  // the keepdims=1 shape (broadcasts against in)
  int64_t out_count() const { return out_count_; }
  int64_t reduce_count() const { return reduce_count_; }  // elements per output (0 for an empty set)

  bool simple() const { return simple_; }
  int64_t outer() const { return outer_; }
  int64_t reduced() const { return reduced_; }
  int64_t inner() const { return inner_; }

  // General form.
  int64_t base_offset(int64_t out_index) const;
  const std::vector<int64_t>& block_offsets() const { return block_offsets_; }
  int64_t run_length() const { return run_length_; }
  int64_t run_stride() const { return run_stride_; }

 private:
  Shape out_shape_, kept_shape_;
  int64_t out_count_ = 1, reduce_count_ = 1;
  bool simple_ = true;
  int64_t outer_ = 1, reduced_ = 1, inner_ = 1;
  std::vector<int64_t> kept_dims_, kept_strides_;  // merged kept dims and their input strides
  std::vector<int64_t> block_offsets_;             // offsets of every reduced block but the innermost
  int64_t run_length_ = 1, run_stride_ = 1;
};

namespace reduce_detail {

constexpr int kLanes = 8;            // independent accumulators on contiguous runs (vectorises, and sums
                                     // 8 interleaved partial sums: less rounding error than one chain)
constexpr int64_t kChunk = 1 << 14;  // a row longer than this is reduced in chunks merged in order
constexpr int64_t kColumnBlock = 128;

template <class F, class T> typename F::Acc contiguous_acc(const F& f, const T* x, int64_t n) {
  using Acc = typename F::Acc;
  if (n < 2 * kLanes) {
    Acc a = f.init();
    for (int64_t i = 0; i < n; ++i) a = f.step(a, x[i]);
    return a;
  }
  Acc lanes[kLanes];
  for (int k = 0; k < kLanes; ++k) lanes[k] = f.init();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) lanes[k] = f.step(lanes[k], x[i + k]);
  for (int k = 0; i < n; ++i, ++k) lanes[k] = f.step(lanes[k], x[i]);
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) lanes[k] = f.merge(lanes[k], lanes[k + width]);
  return lanes[0];
}

// A row of n contiguous elements, in fixed chunks merged in order.
template <class F, class T> typename F::Acc row_acc(const F& f, const T* x, int64_t n) {
  typename F::Acc a = contiguous_acc(f, x, std::min(n, kChunk));
  for (int64_t c = kChunk; c < n; c += kChunk) a = f.merge(a, contiguous_acc(f, x + c, std::min(kChunk, n - c)));
  return a;
}

}  // namespace reduce_detail

// Runs accumulator f over every reduced set of x; emit(out_index, acc) receives each final state.
template <class F, class T, class Emit> void run_reduction(const ReducePlan& plan, const T* x, const F& f, Emit&& emit) {
  using namespace reduce_detail;
  using Acc = typename F::Acc;
  const int64_t outs = plan.out_count(), r = plan.reduce_count();
  if (outs == 0) return;
  if (r == 0) {
    for (int64_t o = 0; o < outs; ++o) emit(o, f.init());
    return;
  }
  if (plan.simple() && plan.inner() == 1) {
    const int64_t chunks = (r + kChunk - 1) / kChunk;
    if (chunks == 1 || outs >= num_threads()) {
      parallel_for(outs, std::max<int64_t>(1, 32768 / r), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) emit(o, row_acc(f, x + o * r, r));
      });
      return;
    }
    // Few long rows: chunks in parallel, merged in order (same arithmetic as row_acc).
    std::vector<Acc> partial(static_cast<size_t>(outs * chunks));
    parallel_for(outs * chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / chunks, c = (t % chunks) * kChunk;
        partial[static_cast<size_t>(t)] = contiguous_acc(f, x + o * r + c, std::min(kChunk, r - c));
      }
    });
    for (int64_t o = 0; o < outs; ++o) {
      Acc a = partial[static_cast<size_t>(o * chunks)];
      for (int64_t c = 1; c < chunks; ++c) a = f.merge(a, partial[static_cast<size_t>(o * chunks + c)]);
      emit(o, a);
    }
    return;
  }
  if (plan.simple()) {
    // [outer, r, inner]: accumulate a block of columns at a time, reading rows contiguously.
    const int64_t inner = plan.inner(), blocks = (inner + kColumnBlock - 1) / kColumnBlock;
    parallel_for(plan.outer() * blocks, std::max<int64_t>(1, 32768 / (r * std::min(inner, kColumnBlock))),
                      [&](int64_t b, int64_t e) {
                        Acc acc[kColumnBlock];
                        for (int64_t t = b; t < e; ++t) {
                          const int64_t o = t / blocks, j0 = (t % blocks) * kColumnBlock;
                          const int64_t width = std::min(kColumnBlock, inner - j0);
                          for (int64_t j = 0; j < width; ++j) acc[j] = f.init();
                          const T* base = x + o * r * inner + j0;
                          for (int64_t k = 0; k < r; ++k) {
                            const T* row = base + k * inner;
                            for (int64_t j = 0; j < width; ++j) acc[j] = f.step(acc[j], row[j]);
                          }
                          for (int64_t j = 0; j < width; ++j) emit(o * inner + j0 + j, acc[j]);
                        }
                      });
    return;
  }
  // General form.
  const auto& blocks = plan.block_offsets();
  const int64_t run = plan.run_length(), stride = plan.run_stride();
  parallel_for(outs, std::max<int64_t>(1, 32768 / r), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* base = x + plan.base_offset(o);
      Acc a = f.init();
      for (int64_t block : blocks) {
        const T* p = base + block;
        if (stride == 1) a = f.merge(a, contiguous_acc(f, p, run));
        else
          for (int64_t j = 0; j < run; ++j) a = f.step(a, p[j * stride]);
      }
      emit(o, a);
    }
  });
}

}  // namespace mpa
