// BatchNormalization (inference) and LayerNormalization / RMSNormalization on CUDA. The parameters are
// host inputs (OpTraits::host_inputs): they are read and turned into per-channel statistics on the host by
// the CPU's own code (ops/normalize.h), then copied to the device as constants (kept while they repeat); the
// row math is the CPU's (src/kernels/normalize.h), element for element, so outputs match the CPU's bit for
// bit wherever the device's sqrt/division round as the host's do (both are IEEE correctly rounded).
#include <algorithm>
#include <mutex>
#include <vector>

#include "backends/cuda/launch.cuh"
#include "ops/normalize.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa::cuda {

namespace {

// A kernel's constants made on the host (a node's normalisation parameters, in each format it runs in),
// copied to the device once and kept while they repeat: streams and samples read the same initializers, so
// each node run would otherwise allocate and copy them again. Found by their bytes, so a changed value
// (parameters that are computed, not initializers) gets a copy of its own.
class DeviceConstants {
 public:
  template <class A>
  const A* on_device(const std::vector<A>& values) const {
    const size_t bytes = values.size() * sizeof(A);
    const auto* data = reinterpret_cast<const std::byte*>(values.data());
    const int device = running().device().index;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Kept& kept : kept_)
      if (kept.device == device && kept.host.size() == bytes && std::equal(data, data + bytes, kept.host.begin()))
        return reinterpret_cast<const A*>(kept.copy.get());
    if (kept_.size() == kMaxKept) kept_.erase(kept_.begin());  // freed in stream order, after its readers
    Kept made{device, std::vector<std::byte>(data, data + bytes), running().allocate(bytes)};
    if (bytes)
      check(cudaMemcpyAsync(made.copy.get(), data, bytes, cudaMemcpyHostToDevice, running().stream()),
            "normalisation constants");
    kept_.push_back(std::move(made));
    return reinterpret_cast<const A*>(kept_.back().copy.get());
  }

 private:
  static constexpr size_t kMaxKept = 4;  // the reference's and a few formats' parameters of one node
  struct Kept {
    int device;
    std::vector<std::byte> host;
    std::shared_ptr<std::byte[]> copy;
  };
  mutable std::mutex mutex_;
  mutable std::vector<Kept> kept_;
};

// y = (x - mean[c]) * inv_std[c] * scale[c] + bias[c] over x [N, C, S], as NormalizeAffineRow with a
// per-channel scale does.
template <class T, class A>
void normalize_channels(const T* x, T* y, int64_t n, int64_t C, int64_t S, const A* mean, const A* inv_std,
                        const A* scale, const A* bias) {
  for_each_index(n, [=] __device__(int64_t i) {
    const int64_t c = (i / S) % C;
    y[i] = store<T>((load(x[i]) - mean[c]) * inv_std[c] * scale[c] + bias[c]);
  });
}

class BatchNormalizationOp : public OpKernel {
 public:
  explicit BatchNormalizationOp(const OpInit& init)
      : epsilon_(init.get_float("epsilon", 1e-5f)),
        training_(init.opset() >= 14 && init.get_int("training_mode", 0) != 0),
        spatial_(init.opset() < 9 ? init.get_int("spatial", 1) != 0 : true) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    if (training_ || (ctx.num_outputs() > 1 && ctx.output_requested(1)))
      fail(who + ": training-mode BatchNormalization has no CUDA kernel");
    const Tensor &scale_t = ctx.input(1), &bias_t = ctx.input(2), &mean_t = ctx.input(3), &var_t = ctx.input(4);
    const ChannelSplit split = batch_norm_channels(who, x, spatial_, {&scale_t, &bias_t, &mean_t, &var_t});
    Tensor y = running().empty(x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const std::vector<A> scale = param_vector<A>(scale_t, who), bias = param_vector<A>(bias_t, who);
      const std::vector<A> mean = param_vector<A>(mean_t, who), var = param_vector<A>(var_t, who);
      const size_t channels = mean.size();
      // scale | bias | mean | 1/sqrt(var + epsilon), one block of constants on the device
      std::vector<A> constants(4 * channels);
      std::copy(scale.begin(), scale.end(), constants.begin());
      std::copy(bias.begin(), bias.end(), constants.begin() + channels);
      std::copy(mean.begin(), mean.end(), constants.begin() + 2 * channels);
      for (size_t c = 0; c < channels; ++c)
        constants[3 * channels + c] = A(1) / dmath::sqrt(var[c] + static_cast<A>(epsilon_));
      const A* d = constants_.on_device(constants);
      normalize_channels(device_data<T>(x), device_data<T>(y), x.numel(), split.C, split.S, d + 2 * channels,
                         d + 3 * channels, d, d + channels);
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  float epsilon_;
  bool training_, spatial_;
  DeviceConstants constants_;
};

template <class Stats, class T, class A>
void normalize_rows(const T* x, T* y, int64_t rows, int64_t n, A epsilon, const A* scale, const A* bias) {
  for_each_index(rows, [=] __device__(int64_t r) {
    const RowStats<A> st = Stats{}(x + r * n, n, epsilon);
    NormalizeAffineRow{}(x + r * n, y + r * n, n, st, scale, 1, bias, 1);
  });
}

// The tensor is [rows, n] with n = prod(shape[axis:]), as ops/layer_norm.cpp splits it.
template <class Stats, bool kHasBias>
class TrailingNormOp : public OpKernel {
 public:
  explicit TrailingNormOp(const OpInit& init)
      : axis_(init.get_int("axis", -1)), epsilon_(init.get_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale_t = ctx.input(1);
    const Tensor* bias_t = kHasBias ? ctx.optional_input(2) : nullptr;
    const std::string who = ctx.node().label();
    if (ctx.num_outputs() > 1 && (ctx.output_requested(1) || (ctx.num_outputs() > 2 && ctx.output_requested(2))))
      fail(who + ": LayerNormalization's statistics outputs have no CUDA kernel");
    const TrailingSplit split = trailing_split(x.shape(), normalize_axis(axis_, x.rank(), who));
    const int64_t rows = split.rows, n = split.n;
    const Shape& norm_shape = split.norm_shape;
    Tensor y = running().empty(x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      // scale | bias (when there is one), one block of constants on the device
      std::vector<A> constants = param_expanded<A>(scale_t, norm_shape, who, "Scale");
      if (bias_t) {
        const std::vector<A> bias = param_expanded<A>(*bias_t, norm_shape, who, "B");
        constants.insert(constants.end(), bias.begin(), bias.end());
      }
      const A* d = constants_.on_device(constants);
      normalize_rows<Stats>(device_data<T>(x), device_data<T>(y), rows, n, static_cast<A>(epsilon_), d,
                            bias_t ? d + n : nullptr);
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  int64_t axis_;
  float epsilon_;
  DeviceConstants constants_;
};

using LayerNormalizationKernel = TrailingNormOp<MeanInvStdRow, true>;
using RMSNormalizationKernel = TrailingNormOp<RmsInvRow, false>;

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "BatchNormalization", BatchNormalizationOp, 1, 6, 7, 9, 14, 15);
MPA_REGISTER_KERNEL("cuda", "", "LayerNormalization", LayerNormalizationKernel, 17);
MPA_REGISTER_KERNEL("cuda", "", "RMSNormalization", RMSNormalizationKernel, 23);

}  // namespace mpa::cuda
