// Cast and CastLike on CUDA: the CPU's conversion functor (src/kernels/cast.h) over every pair of stored
// element types; the target type is read as on the CPU (ops/cast.h), and a cast to the same type shares
// the input's storage, as on the CPU.
#include "backends/cuda/ops/elementwise.cuh"
#include "kernels/cast.h"
#include "ops/cast.h"

namespace mpa::cuda {

namespace {

void cast_tensor(KernelContext& ctx, const Tensor& x, DType to) {
  if (x.dtype() == to) return ctx.set_output(0, x);
  Tensor y = running().empty(to, x.shape());
  visit_dtype(x.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    visit_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      map_unary(device_data<From>(x), device_data<To>(y), x.numel(), CastToF<To>{});
    });
  });
  ctx.set_output(0, std::move(y));
}

class CastOp : public OpKernel {
 public:
  explicit CastOp(const OpInit& init) : to_(cast_target(init)) {}
  void compute(KernelContext& ctx) const override { cast_tensor(ctx, ctx.input(0), to_); }

 private:
  DType to_;
};

class CastLikeOp : public OpKernel {
 public:
  explicit CastLikeOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override { cast_tensor(ctx, ctx.input(0), ctx.input(1).dtype()); }
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "Cast", CastOp, 1, 6, 9, 13, 19, 21, 23, 24, 25);
MPA_REGISTER_KERNEL("cuda", "", "CastLike", CastLikeOp, 15, 19, 21, 23, 24, 25);

}  // namespace mpa::cuda
