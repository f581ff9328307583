// Gather, GatherElements, GatherND: validated indices become source offsets (ops/indexing.h), then
// slices are copied by bytes.
#include "ops/gather.h"

#include "ops/indexing.h"
#include "ops/shape_helpers.h"

namespace mpa {

GatherGeometry gather_geometry(const Node& node, int64_t axis_attr, const Tensor& data, const Tensor& indices) {
  const int64_t axis = normalize_axis(node, axis_attr, data.rank());
  const Shape& ds = data.shape();
  GatherGeometry g;
  g.outer = shape_numel(Shape(ds.begin(), ds.begin() + axis));
  g.inner = shape_numel(Shape(ds.begin() + axis + 1, ds.end()));
  g.dim = ds[static_cast<size_t>(axis)];
  g.out_shape = Shape(ds.begin(), ds.begin() + axis);
  g.out_shape.insert(g.out_shape.end(), indices.shape().begin(), indices.shape().end());
  g.out_shape.insert(g.out_shape.end(), ds.begin() + axis + 1, ds.end());
  for (int64_t value : index_values(node, indices)) g.rows.push_back(checked_index(node, value, g.dim, "index"));
  return g;
}

class GatherOp : public OpKernel {
 public:
  explicit GatherOp(const OpInit& init) : axis_(init.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const GatherGeometry g = gather_geometry(ctx.node(), axis_, data, ctx.input(1));
    std::vector<int64_t> offsets;
    offsets.reserve(static_cast<size_t>(g.outer) * g.rows.size());
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t row : g.rows) offsets.push_back((o * g.dim + row) * g.inner);
    Tensor& out = allocate_checked(ctx, 0, data.dtype(), g.out_shape);
    gather_slices(out, data, offsets, g.inner);
  }

 private:
  int64_t axis_;
};
MPA_OP_TRAITS("", "Gather", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "Gather", GatherOp, 1, 11, 13);

class GatherElementsOp : public OpKernel {
 public:
  explicit GatherElementsOp(const OpInit& init) : axis_(init.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const int64_t axis = normalize_axis(ctx.node(), axis_, data.rank());
    const std::vector<int64_t> offsets = element_offsets(ctx.node(), indices, data.shape(), axis);
    Tensor& out = allocate_checked(ctx, 0, data.dtype(), indices.shape());
    gather_slices(out, data, offsets, 1);
  }

 private:
  int64_t axis_;
};
MPA_OP_TRAITS("", "GatherElements", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "GatherElements", GatherElementsOp, 11, 13);

class GatherNDOp : public OpKernel {
 public:
  explicit GatherNDOp(const OpInit& init) : batch_dims_(init.get_int("batch_dims", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    int64_t slice = 0;
    const std::vector<int64_t> offsets = nd_offsets(ctx.node(), indices, data.shape(), batch_dims_, &slice);
    const Shape& is = indices.shape();
    Shape out_shape(is.begin(), is.end() - 1);
    const size_t tail = data.shape().size() - static_cast<size_t>(batch_dims_ + is.back());
    out_shape.insert(out_shape.end(), data.shape().end() - static_cast<std::ptrdiff_t>(tail), data.shape().end());
    Tensor& out = allocate_checked(ctx, 0, data.dtype(), out_shape);
    gather_slices(out, data, offsets, slice);
  }

 private:
  int64_t batch_dims_;
};
MPA_OP_TRAITS("", "GatherND", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "GatherND", GatherNDOp, 11, 12, 13);

}  // namespace mpa
