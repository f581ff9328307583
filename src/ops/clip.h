// Clip's bounds, shared by the CPU and CUDA kernels: the 'min'/'max' float attributes before opset 11, the
// optional scalar inputs 'min'/'max' (same type as the input; host inputs) from opset 11. Absent bounds are
// unbounded.
#pragma once
#include <limits>

#include "kernels/unary.h"
#include "ops/op.h"

namespace mpa {

class ClipAttrs {
 public:
  explicit ClipAttrs(const OpInit& init) : bounds_from_inputs_(init.opset() >= 11) {
    if (bounds_from_inputs_) return;
    min_attr_ = init.get_float("min", -std::numeric_limits<float>::infinity());
    max_attr_ = init.get_float("max", std::numeric_limits<float>::infinity());
  }

  // The functor clipping values of storage type T.
  template <class T>
  ClipF<compute_t<T>> bounds(const KernelContext& ctx) const {
    using C = compute_t<T>;
    ClipF<C> clip{lowest<C>(), highest<C>()};
    if (bounds_from_inputs_) {
      if (const Tensor* lo = ctx.optional_input(1)) clip.lo = bound<T>(ctx.node(), *lo, "min");
      if (const Tensor* hi = ctx.optional_input(2)) clip.hi = bound<T>(ctx.node(), *hi, "max");
    } else {
      clip.lo = static_cast<C>(min_attr_);
      clip.hi = static_cast<C>(max_attr_);
    }
    return clip;
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

}  // namespace mpa
