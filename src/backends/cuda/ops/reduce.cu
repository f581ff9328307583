// Reduce* on CUDA: the CPU's accumulator functors (src/kernels/reduce.h) and axes handling (ops/reduce.cpp),
// one thread per output element folding its reduced elements in row-major order. The CPU folds in lanes
// and chunks, so sums may associate differently: the selftest compares them by NMSE.
#include "backends/cuda/launch.cuh"
#include "kernels/reduce.h"
#include "ops/op.h"
#include "ops/reduce.h"
#include "tensor/dispatch.h"

namespace mpa::cuda {

namespace {

// Output element o reads base(o) + the offsets of the reduced dims' odometer.
struct ReduceWalk {
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  int64_t reduced_dims[kMaxRank] = {}, reduced_strides[kMaxRank] = {};
  int64_t count = 1;  // reduced elements per output
};

ReduceWalk reduce_walk(const Shape& in, const std::vector<int64_t>& axes) {
  if (in.size() > static_cast<size_t>(kMaxRank)) fail("cuda: rank beyond " + std::to_string(kMaxRank));
  ReduceWalk walk;
  int64_t stride = 1;
  std::vector<int64_t> strides(in.size());
  for (size_t d = in.size(); d-- > 0;) strides[d] = stride, stride *= in[d];
  for (size_t d = 0; d < in.size(); ++d) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end()) {
      walk.reduced_dims[walk.reduced_rank] = in[d];
      walk.reduced_strides[walk.reduced_rank++] = strides[d];
      walk.count *= in[d];
    } else {
      walk.kept_dims[walk.kept_rank] = in[d];
      walk.kept_strides[walk.kept_rank++] = strides[d];
    }
  }
  return walk;
}

template <class T, class F>
void reduce(const T* x, T* y, int64_t outputs, ReduceWalk walk, F f) {
  for_each_index(outputs, [=] __device__(int64_t o) {
    int64_t base = 0, index = o;
    for (int d = walk.kept_rank - 1; d >= 0; --d) {
      base += (index % walk.kept_dims[d]) * walk.kept_strides[d];
      index /= walk.kept_dims[d];
    }
    typename F::Acc a = f.init();
    for (int64_t r = 0; r < walk.count; ++r) {
      int64_t offset = base, rest = r;
      for (int d = walk.reduced_rank - 1; d >= 0; --d) {
        offset += (rest % walk.reduced_dims[d]) * walk.reduced_strides[d];
        rest /= walk.reduced_dims[d];
      }
      a = f.step(a, x[offset]);
    }
    y[o] = f.finalize(a, walk.count);
  });
}

template <template <class> class F, int64_t kAxesInputSince, bool kAllowsBool = false>
class ReduceOp : public OpKernel {
 public:
  explicit ReduceOp(const OpInit& init)
      : axes_from_input_(init.opset() >= kAxesInputSince),
        keepdims_(init.get_int("keepdims", 1) != 0),
        noop_with_empty_axes_(axes_from_input_ && init.get_int("noop_with_empty_axes", 0) != 0),
        attr_axes_(init.get_ints("axes")) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    const std::vector<int64_t> axes = reduce_axes(ctx, x.rank(), axes_from_input_, noop_with_empty_axes_, attr_axes_);
    const ReducePlan plan(x.shape(), axes, keepdims_);
    const ReduceWalk walk = reduce_walk(x.shape(), axes);
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool> && !kAllowsBool) {
        fail(who + ": bool input is not allowed for this op");
      } else {
        Tensor y = running().empty(x.dtype(), plan.out_shape());
        reduce(device_data<T>(x), device_data<T>(y), y.numel(), walk, F<T>{});
        ctx.set_output(0, std::move(y));
      }
    });
  }

 private:
  bool axes_from_input_, keepdims_, noop_with_empty_axes_;
  std::vector<int64_t> attr_axes_;
};

using ReduceSumKernel = ReduceOp<ReduceSumF, 13>;
using ReduceMeanKernel = ReduceOp<ReduceMeanF, 18>;
using ReduceMaxKernel = ReduceOp<ReduceMaxF, 18, true>;
using ReduceMinKernel = ReduceOp<ReduceMinF, 18, true>;
using ReduceL2Kernel = ReduceOp<ReduceL2F, 18>;
using ReduceSumSquareKernel = ReduceOp<ReduceSumSquareF, 18>;

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "ReduceSum", ReduceSumKernel, 1, 11, 13);
MPA_REGISTER_KERNEL("cuda", "", "ReduceMean", ReduceMeanKernel, 1, 11, 13, 18);
MPA_REGISTER_KERNEL("cuda", "", "ReduceMax", ReduceMaxKernel, 1, 11, 12, 13, 18, 20);
MPA_REGISTER_KERNEL("cuda", "", "ReduceMin", ReduceMinKernel, 1, 11, 12, 13, 18, 20);
MPA_REGISTER_KERNEL("cuda", "", "ReduceL2", ReduceL2Kernel, 1, 11, 13, 18);
MPA_REGISTER_KERNEL("cuda", "", "ReduceSumSquare", ReduceSumSquareKernel, 1, 11, 13, 18);

}  // namespace mpa::cuda
