// Cast (target type from the 'to' attribute; a type name string in opset 1) and CastLike (target type
// of the second input). Conversion rules: cast_value in src/kernels/cast.h between the computing types;
// a narrow type (tensor/narrow.h) is reached through float (narrow floats; float64 is rounded to float
// first) or int64 (int4/uint4/int2/uint2, wrapping like the other integer casts). 'saturate' and
// 'round_mode' concern narrow float targets only.
#include "ops/cast.h"

#include <map>

#include "kernels/cast.h"
#include "ops/elementwise.h"
#include "tensor/narrow.h"

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

// The target type, or UnsupportedType for valid ONNX types the runtime does not store (string, complex).
DType target_type(const Node& node, int32_t to) {
  if (dtype_is_supported(to)) return static_cast<DType>(to);
  if (to > 0 && to <= 26)
    throw UnsupportedType(node.label() + ": casting to " + onnx_type_name(to) + " is not supported");
  fail(node.label() + ": 'to' is not a valid element type (" + std::to_string(to) + ")");
}

// What Cast's attributes say about narrow float targets.
struct NarrowCastRules {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::Up;
};

NarrowCastRules narrow_cast_rules(const OpInit& init) {
  NarrowCastRules rules;
  rules.saturate = init.get_int("saturate", 1) != 0;
  const std::string mode = init.get_string("round_mode", "up");
  if (mode == "down")
    rules.rounding = E8M0Rounding::Down;
  else if (mode == "nearest")
    rules.rounding = E8M0Rounding::Nearest;
  else if (mode != "up")
    fail(init.node().label() + ": round_mode must be up, down or nearest, not '" + mode + "'");
  return rules;
}

// Elements of x as float (F = float) or as int64 (F = int64_t), the two ways into a narrow type.
template <class F>
void read_as(const Tensor& x, F* out) {
  if (dtype_is_narrow(x.dtype())) {
    const DType t = x.dtype();
    const bool is_float = dtype_is_narrow_float(t);
    // [=]: is_float goes unused where F is float, which an explicit capture would have clang warn about.
    cpu::map_unary(static_cast<const uint8_t*>(x.raw()), out, x.numel(), [=](uint8_t code) {
      const float v = narrow_to_float(t, code);
      if constexpr (std::is_same_v<F, float>)
        return v;
      else
        return is_float ? float_to_integer<int64_t>(v) : static_cast<int64_t>(v);
    });
    return;
  }
  visit_dtype(x.dtype(), [&](auto tag) {
    using From = typename decltype(tag)::type;
    cpu::map_unary(x.data<From>(), out, x.numel(), CastToF<F>{});
  });
}

void cast_tensor(KernelContext& ctx, const Tensor& x, DType to, const NarrowCastRules& rules) {
  if (x.dtype() == to) {  // no conversion: share the input's storage
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.allocate_output(0, to, x.shape());
  const int64_t n = x.numel();
  if (dtype_is_narrow_float(to)) {
    std::vector<float> values(static_cast<size_t>(n));
    read_as(x, values.data());
    cpu::map_unary(values.data(), static_cast<uint8_t*>(y.raw()), n,
                   [to, rules](float v) { return float_to_narrow(to, v, rules.saturate, rules.rounding); });
  } else if (dtype_is_narrow(to)) {
    std::vector<int64_t> values(static_cast<size_t>(n));
    read_as(x, values.data());
    cpu::map_unary(values.data(), static_cast<uint8_t*>(y.raw()), n,
                   [to](int64_t v) { return wrap_to_narrow_int(to, v); });
  } else if (dtype_is_narrow(x.dtype())) {
    const DType from = x.dtype();
    const bool is_float = dtype_is_narrow_float(from);
    visit_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      cpu::map_unary(static_cast<const uint8_t*>(x.raw()), y.data<To>(), n, [from, is_float](uint8_t code) {
        const float v = narrow_to_float(from, code);
        // Integers go on as integers, so that int4 -> bool or -> uint8 wraps as integer casts do.
        return is_float ? cast_value<To>(v) : cast_value<To>(static_cast<int64_t>(v));
      });
    });
  } else {
    visit_dtype(x.dtype(), [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      visit_dtype(to, [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        cpu::map_unary(x.data<From>(), y.data<To>(), n, CastToF<To>{});
      });
    });
  }
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
  explicit CastOp(const OpInit& init) : to_(cast_target(init)), rules_(narrow_cast_rules(init)) {}
  void compute(KernelContext& ctx) const override { cast_tensor(ctx, ctx.input(0), to_, rules_); }

 private:
  DType to_;
  NarrowCastRules rules_;
};

class CastLikeOp : public OpKernel {
 public:
  explicit CastLikeOp(const OpInit& init) : rules_(narrow_cast_rules(init)) {}
  void compute(KernelContext& ctx) const override { cast_tensor(ctx, ctx.input(0), ctx.input(1).dtype(), rules_); }

 private:
  NarrowCastRules rules_;
};

MPA_OP_TRAITS("", "Cast", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Cast", CastOp, 1, 6, 9, 13, 19, 21, 23, 24, 25);
MPA_OP_TRAITS("", "CastLike", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "CastLike", CastLikeOp, 15, 19, 21, 23, 24, 25);

}  // namespace mpa
