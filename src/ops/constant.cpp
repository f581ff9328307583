// Constant and ConstantOfShape: outputs built from attributes.
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

// One of value (tensor), value_float(s), value_int(s) (the scalar/list forms since opset 12). String
// values are an element type this runtime does not store; sparse values are not supported.
class ConstantOp : public OpKernel {
 public:
  explicit ConstantOp(const OpInit& init) {
    const Node& node = init.node();
    if (init.has("value_string") || init.has("value_strings"))
      throw UnsupportedType(node.label() + ": string constants are not supported (element type string)");
    if (init.has("sparse_value")) fail(node.label() + ": sparse_value constants are not supported");
    if (init.has("value")) {
      value_ = init.require_tensor("value");
    } else if (init.has("value_float")) {
      value_ = Tensor::scalar<float>(init.get_float("value_float", 0.f));
    } else if (init.has("value_floats")) {
      const std::vector<float> v = init.get_floats("value_floats");
      value_ = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
    } else if (init.has("value_int")) {
      value_ = Tensor::scalar<int64_t>(init.get_int("value_int", 0));
    } else if (init.has("value_ints")) {
      const std::vector<int64_t> v = init.get_ints("value_ints");
      value_ = Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
    } else {
      fail(node.label() + ": has none of the attributes value, value_float(s), value_int(s)");
    }
    if (!value_.defined()) fail(node.label() + ": attribute 'value' holds no tensor");
  }
  void compute(KernelContext& ctx) const override { ctx.set_output(0, value_); }  // immutable: shared

 private:
  Tensor value_;
};
MPA_OP_TRAITS("", "Constant", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Constant", ConstantOp, 1, 9, 11, 12, 13, 19, 21, 23, 24, 25);

class ConstantOfShapeOp : public OpKernel {
 public:
  explicit ConstantOfShapeOp(const OpInit& init) : value_(Tensor::scalar<float>(0.f)) {
    if (init.has("value")) value_ = init.require_tensor("value");
    if (value_.numel() != 1)
      fail(init.node().label() + ": attribute 'value' must hold one element, got shape " + shape_str(value_.shape()));
  }
  void compute(KernelContext& ctx) const override {
    const Shape shape = index_values(ctx.node(), ctx.input(0));
    Tensor& out = allocate_checked(ctx, 0, value_.dtype(), shape);
    fill_elements(out.raw(), out.numel(), value_.raw(), dtype_size(value_.dtype()));
  }

 private:
  Tensor value_;
};
MPA_OP_TRAITS("", "ConstantOfShape", {.precision = PrecisionClass::Exact, .host_inputs = {0}});
MPA_REGISTER_OP("", "ConstantOfShape", ConstantOfShapeOp, 9, 20, 21, 23, 24, 25);

}  // namespace mpa
