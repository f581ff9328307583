// Reshape, Flatten, Squeeze, Unsqueeze: new shape, same storage (the output aliases the input).
#include <algorithm>

#include "ops/shape_helpers.h"

namespace mpa {

namespace {

// The axes of Squeeze/Unsqueeze: an attribute before opset 13, an (optional) input since.
std::vector<int64_t> axes_operand(const KernelContext& ctx, int64_t opset, const std::vector<int64_t>& attr) {
  if (opset < 13) return attr;
  const Tensor* t = ctx.optional_input(1);
  return t ? index_values(ctx.node(), *t) : std::vector<int64_t>{};
}

}  // namespace

class ReshapeOp : public OpKernel {
 public:
  explicit ReshapeOp(const OpInit& init)
      : opset_(init.opset()), allowzero_(init.get_int("allowzero", 0) != 0), attr_shape_(init.get_ints("shape")) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Node& node = ctx.node();
    const std::vector<int64_t> requested = opset_ < 5 ? attr_shape_ : index_values(node, ctx.input(1));
    Shape out(requested.size(), 1);
    int64_t infer = -1;
    bool has_zero = false;
    for (size_t i = 0; i < requested.size(); ++i) {
      int64_t d = requested[i];
      if (d == 0 && !allowzero_) {
        if (static_cast<int64_t>(i) >= data.rank())
          fail(node.label() + ": shape " + shape_str(requested) + " copies dim " + std::to_string(i) +
               " (0) but the input " + shape_str(data.shape()) + " has rank " + std::to_string(data.rank()));
        d = data.dim(static_cast<int>(i));
      } else if (d == 0) {
        has_zero = true;
      }
      if (d == -1) {
        if (infer >= 0) fail(node.label() + ": shape " + shape_str(requested) + " has more than one -1");
        infer = static_cast<int64_t>(i);
        continue;
      }
      if (d < 0) fail(node.label() + ": shape " + shape_str(requested) + " has invalid dimension " + std::to_string(d));
      out[i] = d;
    }
    const int64_t known = checked_numel(node, out);
    if (infer >= 0) {
      if (has_zero) fail(node.label() + ": shape " + shape_str(requested) + " has both 0 (allowzero=1) and -1");
      if (known == 0 || data.numel() % known != 0)
        fail(node.label() + ": cannot reshape " + shape_str(data.shape()) + " (" + std::to_string(data.numel()) +
             " elements) to " + shape_str(requested));
      out[static_cast<size_t>(infer)] = data.numel() / known;
    } else if (known != data.numel()) {
      fail(node.label() + ": cannot reshape " + shape_str(data.shape()) + " (" + std::to_string(data.numel()) +
           " elements) to " + shape_str(out) + " (" + std::to_string(known) + " elements)");
    }
    ctx.set_output(0, data.reshaped(out));
  }

 private:
  int64_t opset_;
  bool allowzero_;
  std::vector<int64_t> attr_shape_;
};
MPA_OP_TRAITS("", "Reshape",
              {.rounding_commutes = true,
               .moves_values_only = true,
               .precision = PrecisionClass::Exact,
               .shape_only = true,
               .host_inputs = {1}});
MPA_REGISTER_OP("", "Reshape", ReshapeOp, 1, 5, 13, 14, 19, 21, 23, 24, 25);

class FlattenOp : public OpKernel {
 public:
  explicit FlattenOp(const OpInit& init) : axis_(init.get_int("axis", 1)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const int64_t rank = data.rank();
    if (axis_ < -rank || axis_ > rank)
      fail(ctx.node().label() + ": axis " + std::to_string(axis_) + " is out of range for rank " +
           std::to_string(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const Shape& s = data.shape();
    const Shape outer(s.begin(), s.begin() + axis), inner(s.begin() + axis, s.end());
    ctx.set_output(0, data.reshaped({shape_numel(outer), shape_numel(inner)}));
  }

 private:
  int64_t axis_;
};
MPA_OP_TRAITS(
    "", "Flatten",
    {.rounding_commutes = true, .moves_values_only = true, .precision = PrecisionClass::Exact, .shape_only = true});
MPA_REGISTER_OP("", "Flatten", FlattenOp, 1, 9, 11, 13, 21, 23, 24, 25);

class SqueezeOp : public OpKernel {
 public:
  explicit SqueezeOp(const OpInit& init) : opset_(init.opset()), attr_axes_(init.get_ints("axes")) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const std::vector<int64_t> axes = normalize_axes(ctx.node(), axes_operand(ctx, opset_, attr_axes_), data.rank());
    Shape out;
    for (int64_t d = 0; d < data.rank(); ++d) {
      const bool listed = std::find(axes.begin(), axes.end(), d) != axes.end();
      const int64_t size = data.dim(static_cast<int>(d));
      if (listed && size != 1)
        fail(ctx.node().label() + ": cannot squeeze axis " + std::to_string(d) + " of size " + std::to_string(size) +
             " (input " + shape_str(data.shape()) + ")");
      if (axes.empty() ? size != 1 : !listed) out.push_back(size);
    }
    ctx.set_output(0, data.reshaped(out));
  }

 private:
  int64_t opset_;
  std::vector<int64_t> attr_axes_;
};
MPA_OP_TRAITS("", "Squeeze",
              {.rounding_commutes = true,
               .moves_values_only = true,
               .precision = PrecisionClass::Exact,
               .shape_only = true,
               .host_inputs = {1}});
MPA_REGISTER_OP("", "Squeeze", SqueezeOp, 1, 11, 13, 21, 23, 24, 25);

class UnsqueezeOp : public OpKernel {
 public:
  explicit UnsqueezeOp(const OpInit& init) : opset_(init.opset()), attr_axes_(init.get_ints("axes")) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    if (opset_ >= 13 && !ctx.has_input(1)) fail(ctx.node().label() + ": input 'axes' is required");
    const std::vector<int64_t> raw = axes_operand(ctx, opset_, attr_axes_);
    const int64_t out_rank = data.rank() + static_cast<int64_t>(raw.size());
    const std::vector<int64_t> axes = normalize_axes(ctx.node(), raw, out_rank);
    Shape out;
    size_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      if (std::find(axes.begin(), axes.end(), d) != axes.end())
        out.push_back(1);
      else
        out.push_back(data.shape()[next++]);
    }
    ctx.set_output(0, data.reshaped(out));
  }

 private:
  int64_t opset_;
  std::vector<int64_t> attr_axes_;
};
MPA_OP_TRAITS("", "Unsqueeze",
              {.rounding_commutes = true,
               .moves_values_only = true,
               .precision = PrecisionClass::Exact,
               .shape_only = true,
               .host_inputs = {1}});
MPA_REGISTER_OP("", "Unsqueeze", UnsqueezeOp, 1, 11, 13, 21, 23, 24, 25);

}  // namespace mpa
