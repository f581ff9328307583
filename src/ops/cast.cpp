// Cast (target type from the 'to' attribute; a type name string in opset 1) and CastLike (target type
// of the second input). Conversion rules: cast_value in src/kernels/cast.h. 'saturate' and 'round_mode'
// only concern float8/float4 targets, which the runtime does not store (UnsupportedType).
#include "ops/cast.h"

#include <map>

#include "kernels/cast.h"
#include "ops/elementwise.h"

namespace mpa {

namespace {

// Opset 1 names the target type by its TensorProto.DataType name.
int32_t type_from_name(const Node& node, const std::string& name) {
  static const std::map<std::string, int32_t> ids = {
      {"FLOAT", 1},   {"UINT8", 2},      {"INT8", 3},        {"UINT16", 4},   {"INT16", 5},   {"INT32", 6},
      {"INT64", 7},   {"STRING", 8},     {"BOOL", 9},        {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12},
      {"UINT64", 13}, {"COMPLEX64", 14}, {"COMPLEX128", 15}, {"BFLOAT16", 16}};
  auto it = ids.find(name);
  if (it == ids.end()) fail(node.label() + ": 'to' names an unknown type '" + name + "'");
  return it->second;
}

// The target type, or UnsupportedType for valid ONNX types the runtime does not store.
DType target_type(const Node& node, int32_t to) {
  if (dtype_is_supported(to)) return static_cast<DType>(to);
  if (to > 0 && to <= 26)
    throw UnsupportedType(node.label() + ": casting to " + onnx_type_name(to) + " is not supported");
  fail(node.label() + ": 'to' is not a valid element type (" + std::to_string(to) + ")");
}

void cast_tensor(KernelContext& ctx, const Tensor& x, DType to) {
  if (x.dtype() == to) {  // no conversion: share the input's storage
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.allocate_output(0, to, x.shape());
  visit_dtype(x.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    visit_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      cpu::map_unary(x.data<From>(), y.data<To>(), x.numel(), CastToF<To>{});
    });
  });
}

}  // namespace

DType cast_target(const OpInit& init) {
  const Attribute& to = init.require("to");
  const int32_t id =
      to.kind == Attribute::Kind::String ? type_from_name(init.node(), to.s) : static_cast<int32_t>(to.i);
  return target_type(init.node(), id);
}

class CastOp : public OpKernel {
 public:
  explicit CastOp(const OpInit& init) : to_(cast_target(init)) {}
  void compute(KernelContext& ctx) const override { cast_tensor(ctx, ctx.input(0), to_); }

 private:
  DType to_;
};

class CastLikeOp : public OpKernel {
 public:
  explicit CastLikeOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override { cast_tensor(ctx, ctx.input(0), ctx.input(1).dtype()); }
};

MPA_OP_TRAITS("", "Cast", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Cast", CastOp, 1, 6, 9, 13, 19, 21, 23, 24, 25);
MPA_OP_TRAITS("", "CastLike", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "CastLike", CastLikeOp, 15, 19, 21, 23, 24, 25);

}  // namespace mpa
