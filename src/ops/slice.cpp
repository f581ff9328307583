// Slice: starts/ends/axes as attributes before opset 10, as inputs (plus steps) since; the geometry is
// ops/slice.h, shared with the CUDA kernel.
#include "ops/slice.h"

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

class SliceOp : public OpKernel {
 public:
  explicit SliceOp(const OpInit& init) : attrs_(init) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const SliceView view = attrs_.view(ctx);
    if (view.contiguous() && in.device().is_host() && shape_numel(view.out_shape) > 0)
      return ctx.set_output(0, in.view(view.src_offset, view.out_shape));
    Tensor& out = allocate_checked(ctx, 0, in.dtype(), view.out_shape);
    if (out.numel() == 0) return;
    copy_strided(out.raw(), contiguous_strides(view.out_shape), element_ptr(in, view.src_offset), view.src_strides,
                 view.out_shape, dtype_size(in.dtype()));
  }

 private:
  SliceAttrs attrs_;
};
MPA_OP_TRAITS("", "Slice",
              {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1, 2, 3, 4}});
MPA_REGISTER_OP("", "Slice", SliceOp, 1, 10, 11, 13);

}  // namespace mpa
