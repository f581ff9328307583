// MaxPool, AveragePool and the global pools on CUDA: the CPU's geometry (ops/conv_geometry.h) and window
// rules (ops/pool.cpp: taps inside the input, count_include_pad counting taps inside the padded input, a
// maximum that skips NaN after its first tap), one thread per output element visiting its taps in the
// CPU's row-major order, so sums associate as on the CPU.
#include <limits>

#include "backends/cuda/launch.cuh"
#include "ops/conv_geometry.h"
#include "tensor/dispatch.h"

namespace mpa::cuda {

namespace {

struct PoolWindows {
  int rank = 0;
  int64_t in[kMaxRank] = {}, out[kMaxRank] = {}, kernel[kMaxRank] = {}, stride[kMaxRank] = {};
  int64_t dilation[kMaxRank] = {}, pad_begin[kMaxRank] = {}, pad_end[kMaxRank] = {};
  int64_t in_size = 1, out_size = 1;
};

PoolWindows pool_windows(const WindowGeometry& g) {
  if (g.rank() > static_cast<size_t>(kMaxRank)) fail("cuda: pooling over more than 8 dims");
  PoolWindows w;
  w.rank = static_cast<int>(g.rank());
  for (size_t d = 0; d < g.rank(); ++d) {
    w.in[d] = g.in[d], w.out[d] = g.out[d], w.kernel[d] = g.kernel[d], w.stride[d] = g.stride[d];
    w.dilation[d] = g.dilation[d], w.pad_begin[d] = g.pad_begin[d], w.pad_end[d] = g.pad_end[d];
  }
  w.in_size = g.in_size();
  w.out_size = g.out_size();
  return w;
}

template <bool kMax, class T>
void pool(const T* x, T* y, int64_t planes, PoolWindows w, bool count_include_pad) {
  using C = compute_t<T>;
  for_each_index(planes * w.out_size, [=] __device__(int64_t i) {
    const int64_t plane = i / w.out_size;
    int64_t rest = i % w.out_size;
    int64_t first[kMaxRank], lo[kMaxRank], hi[kMaxRank], k[kMaxRank];
    int64_t valid = 1, padded = 1;
    for (int d = w.rank - 1; d >= 0; --d) {
      const int64_t o = rest % w.out[d];
      rest /= w.out[d];
      const int64_t dil = w.dilation[d];
      first[d] = o * w.stride[d] - w.pad_begin[d];
      const auto upto = [&](int64_t limit) {
        return limit - 1 - first[d] < 0 ? int64_t(0) : min(w.kernel[d], (limit - 1 - first[d]) / dil + 1);
      };
      lo[d] = first[d] >= 0 ? 0 : (-first[d] + dil - 1) / dil;
      hi[d] = max(lo[d], upto(w.in[d]));
      valid *= hi[d] - lo[d];
      padded *= upto(w.in[d] + w.pad_end[d]);
      k[d] = lo[d];
    }
    const T* xp = x + plane * w.in_size;
    C best = -static_cast<C>(INFINITY), sum = 0;
    bool any = false;
    if (valid > 0) {
      while (true) {
        int64_t offset = 0;
        for (int d = 0; d < w.rank; ++d) offset = offset * w.in[d] + first[d] + k[d] * w.dilation[d];
        const C v = load(xp[offset]);
        if (kMax) {
          if (v > best || !any) best = v;
          any = true;
        } else {
          sum += v;
        }
        int d = w.rank - 1;
        for (; d >= 0; --d) {
          if (++k[d] < hi[d]) break;
          k[d] = lo[d];
        }
        if (d < 0) break;
      }
    }
    y[i] = store<T>(kMax ? best : static_cast<C>(sum / static_cast<C>(count_include_pad ? padded : valid)));
  });
}

template <bool kMax>
class PoolOp : public OpKernel {
 public:
  explicit PoolOp(const OpInit& init)
      : attrs_(WindowAttrs::read(init)), count_include_pad_(init.get_int("count_include_pad", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string label = ctx.node().label();
    if (!(x.rank() >= 3)) fail(label + ": input X has shape " + shape_str(x.shape()) + ", needs N x C x D1 ...");
    if (kMax && ctx.output_requested(1)) fail(label + ": MaxPool's Indices output has no CUDA kernel");
    const Shape spatial(x.shape().begin() + 2, x.shape().end());
    const WindowGeometry g = window_geometry(label, attrs_, spatial, attrs_.kernel_shape);
    Shape out_shape = {x.dim(0), x.dim(1)};
    out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
    Tensor y = running().empty(x.dtype(), out_shape);
    const PoolWindows w = pool_windows(g);
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      pool<kMax>(device_data<T>(x), device_data<T>(y), x.dim(0) * x.dim(1), w, count_include_pad_);
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  WindowAttrs attrs_;
  bool count_include_pad_;
};

// One thread per plane, in the CPU's order (ops/pool.cpp GlobalPoolOp): the maximum takes NaN, the mean
// sums in the compute type.
template <bool kMax, class T>
void global_pool(const T* x, T* y, int64_t planes, int64_t size) {
  using C = compute_t<T>;
  for_each_index(planes, [=] __device__(int64_t plane) {
    const T* p = x + plane * size;
    C acc = kMax ? -static_cast<C>(INFINITY) : C(0);
    for (int64_t i = 0; i < size; ++i) {
      const C v = load(p[i]);
      if (kMax)
        acc = (v > acc || v != v) ? v : acc;
      else
        acc += v;
    }
    y[plane] = store<T>(kMax ? acc : static_cast<C>(acc / static_cast<C>(size)));
  });
}

template <bool kMax>
class GlobalPoolOp : public OpKernel {
 public:
  explicit GlobalPoolOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (!(x.rank() >= 2))
      fail(ctx.node().label() + ": input X has shape " + shape_str(x.shape()) + ", needs N x C x ...");
    Shape out_shape = x.shape();
    std::fill(out_shape.begin() + 2, out_shape.end(), 1);
    Tensor y = running().empty(x.dtype(), out_shape);
    const int64_t planes = x.dim(0) * x.dim(1), size = planes ? x.numel() / planes : 0;
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      global_pool<kMax>(device_data<T>(x), device_data<T>(y), planes, size);
    });
    ctx.set_output(0, std::move(y));
  }
};

using MaxPoolOp = PoolOp<true>;
using AveragePoolOp = PoolOp<false>;
using GlobalMaxPoolOp = GlobalPoolOp<true>;
using GlobalAveragePoolOp = GlobalPoolOp<false>;

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "MaxPool", MaxPoolOp, 1, 8, 10, 11, 12, 22);
MPA_REGISTER_KERNEL("cuda", "", "AveragePool", AveragePoolOp, 1, 7, 10, 11, 19, 22);
MPA_REGISTER_KERNEL("cuda", "", "GlobalAveragePool", GlobalAveragePoolOp, 1, 22);
MPA_REGISTER_KERNEL("cuda", "", "GlobalMaxPool", GlobalMaxPoolOp, 1, 22);

}  // namespace mpa::cuda
