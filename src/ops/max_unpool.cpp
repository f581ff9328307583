// MaxUnpool (9, 11, 22): scatters X into a zero tensor at the flat positions MaxPool's Indices give, in the
// shape the pooling geometry implies, placed at the start of output_shape where that input is given.
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

class MaxUnpoolOp : public OpKernel {
 public:
  explicit MaxUnpoolOp(const OpInit& init)
      : kernel_(init.get_ints("kernel_shape")), pads_(init.get_ints("pads")), strides_(init.get_ints("strides")) {
    const size_t n = kernel_.size();
    if (n == 0) fail(init.node().label() + ": kernel_shape is required");
    if (pads_.empty()) pads_.assign(2 * n, 0);
    if (strides_.empty()) strides_.assign(n, 1);
    if (pads_.size() != 2 * n || strides_.size() != n)
      fail(init.node().label() + ": pads and strides must match the " + std::to_string(n) + " kernel dims");
  }

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const size_t n = kernel_.size();
    if (size_t(x.rank()) != n + 2)
      fail(node.label() + ": X " + shape_str(x.shape()) + " does not have 2 + " + std::to_string(n) + " dims");
    const std::vector<int64_t> indices = index_values(node, ctx.input(1));
    if (int64_t(indices.size()) != x.numel())
      fail(node.label() + ": I has " + std::to_string(indices.size()) + " indices for " + std::to_string(x.numel()) +
           " values");
    Shape inferred = {x.dim(0), x.dim(1)};
    for (size_t d = 0; d < n; ++d)
      inferred.push_back((x.dim(int(d + 2)) - 1) * strides_[d] - pads_[d] - pads_[n + d] + kernel_[d]);
    Shape out_shape = inferred;
    if (const Tensor* given = ctx.optional_input(2)) {
      out_shape = index_values(node, *given);
      bool fits = out_shape.size() == inferred.size();
      for (size_t d = 0; fits && d < out_shape.size(); ++d) fits = out_shape[d] >= inferred[d];
      if (!fits)
        fail(node.label() + ": output_shape " + shape_str(out_shape) + " is smaller than the unpooled " +
             shape_str(inferred));
    }
    const int64_t inferred_numel = checked_numel(node, inferred);
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), out_shape);
    std::memset(y.raw(), 0, y.nbytes());
    // The indices address the inferred shape; it lies at the start of every output dim.
    const std::vector<int64_t> inferred_strides = contiguous_strides(inferred),
                               out_strides = contiguous_strides(out_shape);
    visit_elem_bytes(dtype_size(x.dtype()), [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* src = static_cast<const U*>(x.raw());
      U* dst = static_cast<U*>(y.raw());
      for (size_t i = 0; i < indices.size(); ++i) {
        int64_t flat = indices[i];
        if (flat < 0 || flat >= inferred_numel)
          fail(node.label() + ": index " + std::to_string(flat) + " is outside the unpooled " + shape_str(inferred));
        int64_t at = 0;
        for (size_t d = 0; d < inferred.size(); ++d) {
          at += flat / inferred_strides[d] * out_strides[d];
          flat %= inferred_strides[d];
        }
        dst[at] = src[i];
      }
    });
  }

 private:
  std::vector<int64_t> kernel_, pads_, strides_;
};

}  // namespace

MPA_OP_TRAITS("", "MaxUnpool", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1, 2}});
MPA_REGISTER_OP("", "MaxUnpool", MaxUnpoolOp, 9, 11, 22);

}  // namespace mpa
