// Where(condition, X, Y) with numpy broadcasting over all three inputs; any element type.
#include "kernels/binary.h"
#include "ops/elementwise.h"

namespace mpa {

class WhereOp : public OpKernel {
 public:
  explicit WhereOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    if (!(c.dtype() == DType::Bool)) fail(node.label() + ": condition must be bool, got " + dtype_name(c.dtype()));
    if (!(x.dtype() == y.dtype()))
      fail(node.label() + ": X and Y have different element types " + dtype_name(x.dtype()) + " and " +
           dtype_name(y.dtype()));
    const Shape out_shape = broadcast_output_shape(node, {c.shape(), x.shape(), y.shape()});
    visit_types<TypeSet::All>(node, x.dtype(), [&](auto tag) {
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
