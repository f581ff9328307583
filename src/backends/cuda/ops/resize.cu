// Resize and Upsample on CUDA: the CPU's attributes and plan (ops/resize.h: output shape and, per resized
// axis, the taps), one kernel per pass applying them as the CPU's resize_axis does: nearest copies the first
// tap of nonzero weight (any element type), linear and cubic sum weight * value in the tap order (float32 and
// float64 tensors), so the sums round as on the CPU.
#include "backends/cuda/ops/movement.cuh"
#include "ops/resize.h"

namespace mpa::cuda {

namespace {

struct PassOnDevice {
  int64_t outer, in, out, inner, n;
  const int64_t* index;
  const double* weight;
  const uint8_t* extrapolate;
};

template <class V>
void resize_pass(const V* src, V* dst, PassOnDevice p, bool nearest, V extrapolation) {
  for_each_index(p.outer * p.out * p.inner, [=] __device__(int64_t i) {
    const int64_t e = i % p.inner, row = i / p.inner, o = row / p.out, y = row % p.out;
    if (p.extrapolate[y]) {
      dst[i] = extrapolation;
      return;
    }
    const int64_t* idx = p.index + y * p.n;
    const double* w = p.weight + y * p.n;
    const V* s = src + o * p.in * p.inner + e;
    if (nearest) {
      int64_t j = 0;
      while (j + 1 < p.n && w[j] == 0) ++j;
      dst[i] = s[idx[j] * p.inner];
      return;
    }
    V acc = V(0);
    for (int64_t j = 0; j < p.n; ++j) {
      const V wj = static_cast<V>(w[j]);
      if (wj == V(0)) continue;
      acc += wj * s[idx[j] * p.inner];
    }
    dst[i] = acc;
  });
}

// Nearest for any stored type: moves stored elements, no arithmetic.
template <class V>
void nearest_gather(const V* src, V* dst, PassOnDevice p, V fill) {
  for_each_index(p.outer * p.out * p.inner, [=] __device__(int64_t i) {
    const int64_t e = i % p.inner, row = i / p.inner, o = row / p.out, y = row % p.out;
    if (p.extrapolate[y]) {
      dst[i] = fill;
      return;
    }
    const int64_t* idx = p.index + y * p.n;
    const double* w = p.weight + y * p.n;
    int64_t j = 0;
    while (j + 1 < p.n && w[j] == 0) ++j;
    dst[i] = src[o * p.in * p.inner + idx[j] * p.inner + e];
  });
}

template <class A>
std::shared_ptr<std::byte[]> on_device(const std::vector<A>& values) {
  std::shared_ptr<std::byte[]> bytes = running().allocate(values.size() * sizeof(A));
  if (!values.empty())
    check(cudaMemcpyAsync(bytes.get(), values.data(), values.size() * sizeof(A), cudaMemcpyHostToDevice,
                          running().stream()),
          "Resize taps");
  return bytes;
}

class ResizeOp : public OpKernel {
 public:
  ResizeOp(const OpInit& init, bool upsample) : attrs_(init, upsample) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const ResizePlan plan = attrs_.plan(ctx);
    const ResizeSettings& s = attrs_.settings();
    const bool nearest = s.mode == ResizeMode::Nearest;
    if (!nearest && x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
      fail(ctx.node().label() + ": linear and cubic Resize on " + dtype_name(x.dtype()) +
           " have no CUDA kernel (float32 and float64 only); run it with --device cpu");
    Tensor y = running().empty(x.dtype(), plan.out_shape);
    const size_t size = dtype_size(x.dtype());
    if (y.numel() > 0 && plan.passes.empty()) {
      check(cudaMemcpyAsync(bytes_of(y), bytes_of(x), y.nbytes(), cudaMemcpyDeviceToDevice, running().stream()),
            "Resize");
    } else if (y.numel() > 0) {
      // Passes ping-pong between scratch buffers; the last writes y.
      std::shared_ptr<std::byte[]> scratch[2];
      const std::byte* src = bytes_of(x);
      for (size_t k = 0; k < plan.passes.size(); ++k) {
        const ResizePass& pass = plan.passes[k];
        const bool last = k + 1 == plan.passes.size();
        std::byte* dst = bytes_of(y);
        if (!last) {
          scratch[k % 2] = running().allocate(static_cast<size_t>(pass.outer * pass.out * pass.inner) * size);
          dst = scratch[k % 2].get();
        }
        const auto index = on_device(pass.taps.index);
        const auto weight = on_device(pass.taps.weight);
        const auto extrapolate = on_device(pass.taps.extrapolate);
        const PassOnDevice p{pass.outer,
                             pass.in,
                             pass.out,
                             pass.inner,
                             pass.taps.n,
                             reinterpret_cast<const int64_t*>(index.get()),
                             reinterpret_cast<const double*>(weight.get()),
                             reinterpret_cast<const uint8_t*>(extrapolate.get())};
        if (x.dtype() == DType::Float64) {
          resize_pass(reinterpret_cast<const double*>(src), reinterpret_cast<double*>(dst), p, nearest,
                      s.extrapolation);
        } else if (x.dtype() == DType::Float32) {
          resize_pass(reinterpret_cast<const float*>(src), reinterpret_cast<float*>(dst), p, nearest,
                      static_cast<float>(s.extrapolation));
        } else {
          // Nearest on other types moves stored elements; extrapolation converts as the CPU's does.
          visit_dtype(x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            using V = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
            V fill{};
            if constexpr (std::is_same_v<V, Float16> || std::is_same_v<V, BFloat16>)
              fill = store<V>(static_cast<float>(s.extrapolation));
            else
              fill = static_cast<V>(s.extrapolation);
            nearest_gather(reinterpret_cast<const V*>(src), reinterpret_cast<V*>(dst), p, fill);
          });
        }
        src = dst;
      }
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  ResizeAttrs attrs_;
};

struct ResizeKernel : ResizeOp {
  explicit ResizeKernel(const OpInit& init) : ResizeOp(init, false) {}
};
struct UpsampleKernel : ResizeOp {
  explicit UpsampleKernel(const OpInit& init) : ResizeOp(init, true) {}
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "Resize", ResizeKernel, 10, 11, 13, 18, 19);
MPA_REGISTER_KERNEL("cuda", "", "Upsample", UpsampleKernel, 1, 7, 9, 10);

}  // namespace mpa::cuda
