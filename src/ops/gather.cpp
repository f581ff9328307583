// Gather, GatherElements, GatherND: validated indices become source offsets (ops/indexing.h), then
// slices are copied by bytes.
#include "ops/indexing.h"
#include "ops/shape_helpers.h"

namespace mpa {

class GatherOp : public OpKernel {
 public:
  explicit GatherOp(const OpInit& init) : axis_(init.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const int64_t axis = normalize_axis(node, axis_, data.rank());
    const Shape& ds = data.shape();
    const int64_t outer = shape_numel(Shape(ds.begin(), ds.begin() + axis));
    const int64_t inner = shape_numel(Shape(ds.begin() + axis + 1, ds.end()));
    const int64_t dim = ds[static_cast<size_t>(axis)];
    Shape out_shape(ds.begin(), ds.begin() + axis);
    out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
    out_shape.insert(out_shape.end(), ds.begin() + axis + 1, ds.end());
    const std::vector<int64_t> values = index_values(node, indices);
    std::vector<int64_t> rows(values.size());
    for (size_t j = 0; j < values.size(); ++j) rows[j] = checked_index(node, values[j], dim, "index");
    std::vector<int64_t> offsets;
    offsets.reserve(static_cast<size_t>(outer) * rows.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t row : rows) offsets.push_back((o * dim + row) * inner);
    Tensor& out = allocate_checked(ctx, 0, data.dtype(), out_shape);
    gather_slices(out, data, offsets, inner);
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
