// NonZero and Compress: outputs whose size depends on the data.
#include "ops/indexing.h"
#include "ops/shape_helpers.h"

namespace mpa {

// [rank, count] int64 coordinates of the non-zero elements in row-major order (NaN counts as non-zero).
class NonZeroOp : public OpKernel {
 public:
  explicit NonZeroOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    std::vector<int64_t> hits;
    visit_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = in.data<T>();
      for (int64_t i = 0; i < in.numel(); ++i)
        if (load(p[i]) != compute_t<T>(0)) hits.push_back(i);
    });
    const int64_t rank = in.rank(), count = static_cast<int64_t>(hits.size());
    Tensor& out = allocate_checked(ctx, 0, DType::Int64, {rank, count});
    int64_t* o = out.data<int64_t>();
    for (int64_t c = 0; c < count; ++c) {
      int64_t rest = hits[static_cast<size_t>(c)];
      for (int64_t d = rank; d-- > 0;) {
        const int64_t size = in.dim(static_cast<int>(d));
        o[d * count + c] = rest % size;
        rest /= size;
      }
    }
  }
};
MPA_OP_TRAITS("", "NonZero", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "NonZero", NonZeroOp, 9, 13);

// Keeps the slices along axis (or the elements of the flattened input, without axis) whose condition
// is true; a condition shorter than the axis drops the rest.
class CompressOp : public OpKernel {
 public:
  explicit CompressOp(const OpInit& init) : has_axis_(init.has("axis")), axis_(init.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& in = ctx.input(0);
    const Tensor& condition = ctx.input(1);
    if (condition.rank() != 1) fail(node.label() + ": condition must be 1-D, got " + shape_str(condition.shape()));
    const Tensor data = has_axis_ ? in : in.reshaped({in.numel()});
    const int64_t axis = normalize_axis(node, has_axis_ ? axis_ : 0, data.rank());
    const Shape& s = data.shape();
    const int64_t dim = s[static_cast<size_t>(axis)];
    const std::vector<int64_t> cond = condition.to_int64_vector();
    std::vector<int64_t> kept;
    for (size_t j = 0; j < cond.size(); ++j) {
      if (!cond[j]) continue;
      if (static_cast<int64_t>(j) >= dim)
        fail(node.label() + ": condition has " + std::to_string(cond.size()) + " entries but the axis has size " +
             std::to_string(dim));
      kept.push_back(static_cast<int64_t>(j));
    }
    const int64_t outer = shape_numel(Shape(s.begin(), s.begin() + axis));
    const int64_t inner = shape_numel(Shape(s.begin() + axis + 1, s.end()));
    std::vector<int64_t> offsets;
    offsets.reserve(static_cast<size_t>(outer) * kept.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j : kept) offsets.push_back((o * dim + j) * inner);
    Shape out_shape = s;
    out_shape[static_cast<size_t>(axis)] = static_cast<int64_t>(kept.size());
    Tensor& out = allocate_checked(ctx, 0, in.dtype(), out_shape);
    gather_slices(out, data, offsets, inner);
  }

 private:
  bool has_axis_;
  int64_t axis_;
};
MPA_OP_TRAITS("", "Compress", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Compress", CompressOp, 9, 11);

}  // namespace mpa
