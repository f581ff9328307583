// CenterCropPad (18): crops or zero-pads each of `axes` to the size `shape` gives, keeping the centre (an odd
// difference leaves the extra element at the end).
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

class CenterCropPadOp : public OpKernel {
 public:
  explicit CenterCropPadOp(const OpInit& init) : axes_(init.get_ints("axes")) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> sizes = index_values(node, ctx.input(1));
    std::vector<int64_t> axes = axes_;
    if (axes.empty())
      for (int64_t d = 0; d < x.rank(); ++d) axes.push_back(d);
    axes = normalize_axes(node, axes, x.rank());
    if (sizes.size() != axes.size())
      fail(node.label() + ": shape has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(axes.size()) +
           " axes");
    Shape out_shape = x.shape(), box = x.shape();
    std::vector<int64_t> in_start(size_t(x.rank()), 0), out_start(size_t(x.rank()), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = size_t(axes[i]);
      const int64_t have = x.shape()[a], want = sizes[i];
      if (want < 0) fail(node.label() + ": size " + std::to_string(want) + " is negative");
      out_shape[a] = want;
      box[a] = std::min(have, want);
      (have > want ? in_start : out_start)[a] = std::abs(have - want) / 2;
    }
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), out_shape);
    const size_t elem = dtype_size(x.dtype());
    std::memset(y.raw(), 0, y.nbytes());
    if (shape_numel(box) == 0) return;
    const std::vector<int64_t> in_strides = contiguous_strides(x.shape()), out_strides = contiguous_strides(out_shape);
    int64_t in_offset = 0, out_offset = 0;
    for (size_t d = 0; d < box.size(); ++d) {
      in_offset += in_start[d] * in_strides[d];
      out_offset += out_start[d] * out_strides[d];
    }
    copy_strided(element_ptr(y, out_offset), out_strides, element_ptr(x, in_offset), in_strides, box, elem);
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

// Pads with zeros, which every format holds exactly: rounding commutes with it.
MPA_OP_TRAITS("", "CenterCropPad", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "CenterCropPad", CenterCropPadOp, 18);

}  // namespace mpa
