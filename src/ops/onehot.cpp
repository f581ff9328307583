// OneHot: a new axis of size depth holding on_value at each index and off_value elsewhere. Indices
// outside [-depth, depth) give an all-off row, as the spec says.
#include <cmath>

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

class OneHotOp : public OpKernel {
 public:
  explicit OneHotOp(const OpInit& init) : axis_(init.get_int("axis", -1)) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& indices = ctx.input(0);
    const Tensor& values = ctx.input(2);
    const int64_t depth = scalar_int(node, ctx.input(1), "depth");
    if (depth <= 0) fail(node.label() + ": depth must be positive, got " + std::to_string(depth));
    if (values.numel() != 2)
      fail(node.label() + ": values must hold [off_value, on_value], got shape " + shape_str(values.shape()));
    const int64_t axis = normalize_axis(node, axis_, indices.rank() + 1);
    const Shape& is = indices.shape();
    Shape out_shape(is.begin(), is.begin() + axis);
    out_shape.push_back(depth);
    out_shape.insert(out_shape.end(), is.begin() + axis, is.end());
    Tensor& out = allocate_checked(ctx, 0, values.dtype(), out_shape);
    const size_t e = dtype_size(values.dtype());
    fill_elements(out.raw(), out.numel(), values.raw(), e);
    const int64_t inner = shape_numel(Shape(is.begin() + axis, is.end()));
    const std::vector<double> idx = indices.to_double_vector();  // any numeric type; exact for |x| < 2^53
    for (size_t p = 0; p < idx.size(); ++p) {
      const double v = std::trunc(idx[p]);
      if (!(v >= static_cast<double>(-depth) && v < static_cast<double>(depth))) continue;
      const int64_t j = static_cast<int64_t>(v) < 0 ? static_cast<int64_t>(v) + depth : static_cast<int64_t>(v);
      const int64_t o = static_cast<int64_t>(p) / inner, i = static_cast<int64_t>(p) % inner;
      std::memcpy(element_ptr(out, (o * depth + j) * inner + i), element_ptr(values, 1), e);
    }
  }

 private:
  int64_t axis_;
};
MPA_OP_TRAITS("", "OneHot", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "OneHot", OneHotOp, 9, 11);

}  // namespace mpa
