// The optional ops: wrap a tensor or sequence in an optional (tensor/value.h), ask whether one holds a
// value, and take the value out. Nothing is copied.
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

class OptionalOp : public OpKernel {
 public:
  explicit OptionalOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const ValuePtr& value = ctx.value_input(0);
    if (value && value->kind != Value::Kind::Sequence)
      fail(ctx.node().label() + ": cannot wrap " + value->describe() + " in an optional");
    ctx.set_value_output(0, value ? Value::make_optional(Tensor(), value)
                                  : Value::make_optional(ctx.has_input(0) ? ctx.input(0) : Tensor()));
  }
};

// Opset 18 also takes a plain tensor or sequence (which has an element) and an omitted input (which has none).
class OptionalHasElementOp : public OpKernel {
 public:
  explicit OptionalHasElementOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const ValuePtr& value = ctx.value_input(0);
    const bool has = value ? value->kind == Value::Kind::Sequence || value->has_element() : ctx.has_input(0);
    allocate_checked(ctx, 0, DType::Bool, {}).data<bool>()[0] = has;
  }
};

// Opset 18 also takes a plain tensor or sequence, returned as it is.
class OptionalGetElementOp : public OpKernel {
 public:
  explicit OptionalGetElementOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const ValuePtr& value = ctx.value_input(0);
    if (!value) {
      ctx.set_output(0, ctx.input(0));
    } else if (value->kind == Value::Kind::Sequence) {
      ctx.set_value_output(0, value);
    } else if (value->tensor.defined()) {
      ctx.set_output(0, value->tensor);
    } else {
      if (!value->sequence) fail(ctx.node().label() + ": the optional is empty");
      ctx.set_value_output(0, value->sequence);
    }
  }
};

}  // namespace

// Moving values into and out of optionals is exact; the audit neither probes nor reruns a node that meets
// an optional (runtime/session.h, meets_values).
MPA_OP_TRAITS("", "Optional", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Optional", OptionalOp, 15);
MPA_OP_TRAITS("", "OptionalHasElement", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "OptionalHasElement", OptionalHasElementOp, 15, 18);
MPA_OP_TRAITS("", "OptionalGetElement", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "OptionalGetElement", OptionalGetElementOp, 15, 18);

}  // namespace mpa
