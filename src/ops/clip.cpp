// Clip: bounds from the 'min'/'max' float attributes before opset 11, from the optional scalar inputs
// 'min'/'max' (same type as the input) from opset 11. Absent bounds are unbounded. Math: ClipF.
#include "ops/clip.h"

#include "ops/elementwise.h"

namespace mpa {

class ClipOp : public OpKernel {
 public:
  explicit ClipOp(const OpInit& init) : attrs_(init) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    visit_types<TypeSet::Numeric>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, dtype_of<T>, x.shape());
      cpu::map_unary(x.data<T>(), y.data<T>(), x.numel(), Stored<T, ClipF<compute_t<T>>>{attrs_.bounds<T>(ctx)});
    });
  }

 private:
  ClipAttrs attrs_;
};
MPA_OP_TRAITS("", "Clip", {.precision = PrecisionClass::Exact, .host_inputs = {1, 2}});
MPA_REGISTER_OP("", "Clip", ClipOp, 1, 6, 11, 12, 13);

}  // namespace mpa
