// Clip: bounds from the 'min'/'max' float attributes before opset 11, from the optional scalar inputs
// 'min'/'max' (same type as the input) from opset 11. Absent bounds are unbounded. Math: ClipF.
#include <limits>

#include "kernels/unary.h"
#include "ops/elementwise.h"

namespace mpa {

class ClipOp : public OpKernel {
 public:
  explicit ClipOp(const OpInit& init) : bounds_from_inputs_(init.opset() >= 11) {
    if (bounds_from_inputs_) return;
    min_attr_ = init.get_float("min", -std::numeric_limits<float>::infinity());
    max_attr_ = init.get_float("max", std::numeric_limits<float>::infinity());
  }

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    visit_types<TypeSet::Numeric>(node, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      ClipF<C> clip{lowest<C>(), highest<C>()};
      if (bounds_from_inputs_) {
        if (const Tensor* lo = ctx.optional_input(1)) clip.lo = bound<T>(node, *lo, "min");
        if (const Tensor* hi = ctx.optional_input(2)) clip.hi = bound<T>(node, *hi, "max");
      } else {
        clip.lo = static_cast<C>(min_attr_);
        clip.hi = static_cast<C>(max_attr_);
      }
      Tensor& y = ctx.allocate_output(0, dtype_of<T>, x.shape());
      cpu::map_unary(x.data<T>(), y.data<T>(), x.numel(), Stored<T, ClipF<C>>{clip});
    });
  }

 private:
  template <class C>
  static C lowest() {
    if constexpr (std::numeric_limits<C>::has_infinity)
      return -std::numeric_limits<C>::infinity();
    else
      return std::numeric_limits<C>::lowest();
  }
  template <class C>
  static C highest() {
    if constexpr (std::numeric_limits<C>::has_infinity)
      return std::numeric_limits<C>::infinity();
    else
      return std::numeric_limits<C>::max();
  }
  template <class T>
  static compute_t<T> bound(const Node& node, const Tensor& t, const char* name) {
    if (!(t.dtype() == dtype_of<T>))
      fail(node.label() + ": '" + name + "' has element type " + dtype_name(t.dtype()) + ", the input has " +
           dtype_name(dtype_of<T>));
    if (!(t.numel() == 1)) fail(node.label() + ": '" + name + "' must be a scalar, got shape " + shape_str(t.shape()));
    return load(t.data<T>()[0]);
  }

  bool bounds_from_inputs_;
  float min_attr_ = 0, max_attr_ = 0;
};

MPA_OP_TRAITS("", "Clip", {.precision = PrecisionClass::Exact, .host_inputs = {1, 2}});
MPA_REGISTER_OP("", "Clip", ClipOp, 1, 6, 11, 12, 13);

}  // namespace mpa
