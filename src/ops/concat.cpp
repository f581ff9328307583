// Concat and Split: copies between one tensor and consecutive slabs of another along an axis.
#include "ops/concat.h"

#include <numeric>

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

void copy_slab(Tensor& dst, const Tensor& src, int64_t axis, int64_t offset, bool into_whole) {
  const Tensor& whole = into_whole ? dst : src;
  const Tensor& part = into_whole ? src : dst;
  const std::vector<int64_t> whole_strides = contiguous_strides(whole.shape());
  const std::vector<int64_t> part_strides = contiguous_strides(part.shape());
  const int64_t slab_offset = offset * whole_strides[static_cast<size_t>(axis)];
  const size_t elem = dtype_size(src.dtype());
  if (into_whole)
    copy_strided(element_ptr(dst, slab_offset), whole_strides, src.raw(), part_strides, part.shape(), elem);
  else
    copy_strided(dst.raw(), part_strides, element_ptr(src, slab_offset), whole_strides, part.shape(), elem);
}

ConcatGeometry concat_geometry(const KernelContext& ctx, int64_t axis_attr) {
  const Node& node = ctx.node();
  const size_t n = ctx.num_inputs();
  if (n == 0) fail(node.label() + ": needs at least one input");
  require_same_dtype(ctx, 0, n);
  const Tensor& first = ctx.input(0);
  ConcatGeometry g{normalize_axis(node, axis_attr, first.rank()), first.shape()};
  const size_t axis = static_cast<size_t>(g.axis);
  g.out_shape[axis] = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = ctx.input(i);
    bool ok = t.rank() == first.rank();
    for (size_t d = 0; ok && d < first.shape().size(); ++d) ok = d == axis || t.shape()[d] == first.shape()[d];
    if (!ok)
      fail(node.label() + ": input " + std::to_string(i) + " has shape " + shape_str(t.shape()) +
           ", incompatible with input 0 " + shape_str(first.shape()) + " for concatenation on axis " +
           std::to_string(axis));
    g.out_shape[axis] += t.shape()[axis];
  }
  return g;
}

class ConcatOp : public OpKernel {
 public:
  explicit ConcatOp(const OpInit& init)
      : axis_(init.opset() < 4 ? init.get_int("axis", 1) : init.require_int("axis")) {}

  void compute(KernelContext& ctx) const override {
    const ConcatGeometry g = concat_geometry(ctx, axis_);
    const size_t n = ctx.num_inputs();
    const int64_t axis = g.axis;
    const Tensor& first = ctx.input(0);
    const Shape& out_shape = g.out_shape;
    Tensor& out = allocate_checked(ctx, 0, first.dtype(), out_shape);
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      copy_slab(out, ctx.input(i), axis, offset, true);
      offset += ctx.input(i).dim(static_cast<int>(axis));
    }
  }

 private:
  int64_t axis_;
};
MPA_OP_TRAITS("", "Concat", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Concat", ConcatOp, 1, 4, 11, 13);

// The part sizes come from (by opset): opset 1 the optional input 1 or attribute `split`; 2 and 11 the
// attribute; 13+ the optional input 1; 18+ alternatively `num_outputs` (ceil-sized parts, last smaller).
// Without any of them the axis is split evenly over the outputs.
class SplitOp : public OpKernel {
 public:
  explicit SplitOp(const OpInit& init)
      : opset_(init.opset()),
        axis_(init.get_int("axis", 0)),
        split_attr_(init.get_ints("split")),
        num_outputs_attr_(init.get_int("num_outputs", 0)) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& in = ctx.input(0);
    const int64_t axis = normalize_axis(node, axis_, in.rank());
    const int64_t dim = in.dim(static_cast<int>(axis));
    const int64_t n = static_cast<int64_t>(ctx.num_outputs());
    std::vector<int64_t> split;
    const bool input_form = opset_ == 1 || opset_ >= 13;
    if (input_form && ctx.has_input(1))
      split = index_values(node, ctx.input(1));
    else if (opset_ < 13)
      split = split_attr_;
    if (!split.empty()) {
      if (static_cast<int64_t>(split.size()) != n)
        fail(node.label() + ": split has " + std::to_string(split.size()) + " parts but the node has " +
             std::to_string(n) + " outputs");
      for (int64_t s : split)
        if (s < 0) fail(node.label() + ": split " + shape_str(split) + " has a negative part");
      if (std::accumulate(split.begin(), split.end(), int64_t{0}) != dim)
        fail(node.label() + ": split " + shape_str(split) + " does not sum to the axis size " + std::to_string(dim));
    } else if (num_outputs_attr_ > 0) {
      if (num_outputs_attr_ != n)
        fail(node.label() + ": num_outputs is " + std::to_string(num_outputs_attr_) + " but the node has " +
             std::to_string(n) + " outputs");
      const int64_t chunk = (dim + n - 1) / n;
      if (chunk * (n - 1) > dim)
        fail(node.label() + ": cannot split an axis of size " + std::to_string(dim) + " into " + std::to_string(n) +
             " parts");
      split.assign(static_cast<size_t>(n), chunk);
      split.back() = dim - chunk * (n - 1);
    } else {
      if (n == 0 || dim % n != 0)
        fail(node.label() + ": axis size " + std::to_string(dim) + " cannot be split evenly into " + std::to_string(n) +
             " outputs");
      split.assign(static_cast<size_t>(n), dim / n);
    }
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      Shape part = in.shape();
      part[static_cast<size_t>(axis)] = split[static_cast<size_t>(i)];
      Tensor& out = allocate_checked(ctx, static_cast<size_t>(i), in.dtype(), part);
      copy_slab(out, in, axis, offset, false);
      offset += split[static_cast<size_t>(i)];
    }
  }

 private:
  int64_t opset_, axis_;
  std::vector<int64_t> split_attr_;
  int64_t num_outputs_attr_;
};
MPA_OP_TRAITS("", "Split", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Split", SplitOp, 1, 2, 11, 13, 18);

}  // namespace mpa
