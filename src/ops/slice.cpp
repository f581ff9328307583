// Slice: starts/ends/axes as attributes before opset 10, as inputs (plus steps) since; the geometry is
// ops/slice.h, shared with the CUDA kernel.
#include "ops/slice.h"

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

class SliceOp : public OpKernel {
  static constexpr size_t kSmallInput = size_t{1} << 20;

 public:
  explicit SliceOp(const OpInit& init) : attrs_(init) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const SliceView view = attrs_.view(ctx);
    // A view keeps the whole input alive (budget charged, but counted at the view's size where values are
    // summed): taken where the slice holds at least half of the input or the input is at most 1 MiB, so that a
    // view holds at most twice its own bytes, or 1 MiB.
    const int64_t count = shape_numel(view.out_shape);
    if (view.contiguous() && in.device().is_host() && count > 0 &&
        (2 * count >= in.numel() || in.nbytes() <= kSmallInput))
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
