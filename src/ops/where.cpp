// Where(condition, X, Y) with numpy broadcasting over all three inputs; any element type.
#include "ops/where.h"

#include "kernels/binary.h"

namespace mpa {

class WhereOp : public OpKernel {
 public:
  explicit WhereOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    const Shape out_shape = where_output_shape(ctx);
    visit_types<TypeSet::All>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& out = ctx.allocate_output(0, dtype_of<T>, out_shape);
      cpu::map_ternary(c.data<bool>(), c.shape(), x.data<T>(), x.shape(), y.data<T>(), y.shape(), out.data<T>(),
                       out_shape, WhereF{});
    });
  }
};

MPA_OP_TRAITS("", "Where", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Where", WhereOp, 9, 16);

}  // namespace mpa
