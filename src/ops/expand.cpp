// Expand and Tile: strided copies whose source strides are zero along the repeated dims.
#include <limits>

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"
#include "tensor/broadcast.h"

namespace mpa {

class ExpandOp : public OpKernel {
 public:
  explicit ExpandOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& in = ctx.input(0);
    const Shape target = index_values(node, ctx.input(1));
    for (int64_t d : target)
      if (d < 0) fail(node.label() + ": shape " + shape_str(target) + " has a negative dimension");
    Shape out_shape;
    try {
      out_shape = broadcast_shapes({in.shape(), target});
    } catch (const Error& e) {
      fail(node.label() + ": " + e.what());
    }
    Tensor& out = allocate_checked(ctx, 0, in.dtype(), out_shape);
    const size_t rank = out_shape.size(), offset = rank - in.shape().size();
    const std::vector<int64_t> in_strides = contiguous_strides(in.shape());
    std::vector<int64_t> src_strides(rank, 0);
    for (size_t d = offset; d < rank; ++d) src_strides[d] = in.shape()[d - offset] == 1 ? 0 : in_strides[d - offset];
    copy_strided(out.raw(), contiguous_strides(out_shape), in.raw(), src_strides, out_shape, dtype_size(in.dtype()));
  }
};
MPA_OP_TRAITS("", "Expand", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "Expand", ExpandOp, 8, 13);

// Opset 1 takes (input, tiles, axis) scalars; since 6 a `repeats` vector with one entry per dim.
class TileOp : public OpKernel {
 public:
  explicit TileOp(const OpInit& init) : opset_(init.opset()) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& in = ctx.input(0);
    const size_t rank = in.shape().size();
    std::vector<int64_t> repeats;
    if (opset_ < 6) {
      repeats.assign(rank, 1);
      const int64_t axis = normalize_axis(node, scalar_int(node, ctx.input(2), "axis"), static_cast<int64_t>(rank));
      repeats[static_cast<size_t>(axis)] = scalar_int(node, ctx.input(1), "tiles");
    } else {
      repeats = index_values(node, ctx.input(1));
    }
    if (repeats.size() != rank)
      fail(node.label() + ": repeats has " + std::to_string(repeats.size()) + " values but the input " +
           shape_str(in.shape()) + " has rank " + std::to_string(rank));
    // The copy runs over [r0, d0, r1, d1, ...]: repeat index (source stride 0), then the input dim.
    Shape out_shape(rank), box(2 * rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t r = repeats[d], size = in.shape()[d];
      if (r < 0) fail(node.label() + ": repeats " + shape_str(repeats) + " has a negative value");
      if (size > 0 && r > std::numeric_limits<int64_t>::max() / size)
        fail(node.label() + ": repeating dim " + std::to_string(d) + " (" + std::to_string(size) + ") " +
             std::to_string(r) + " times overflows");
      out_shape[d] = size * r;
      box[2 * d] = r;
      box[2 * d + 1] = size;
    }
    Tensor& out = allocate_checked(ctx, 0, in.dtype(), out_shape);
    const std::vector<int64_t> out_strides = contiguous_strides(out_shape), in_strides = contiguous_strides(in.shape());
    std::vector<int64_t> dst_strides(2 * rank), src_strides(2 * rank);
    for (size_t d = 0; d < rank; ++d) {
      dst_strides[2 * d] = in.shape()[d] * out_strides[d];
      dst_strides[2 * d + 1] = out_strides[d];
      src_strides[2 * d] = 0;
      src_strides[2 * d + 1] = in_strides[d];
    }
    copy_strided(out.raw(), dst_strides, in.raw(), src_strides, box, dtype_size(in.dtype()));
  }

 private:
  int64_t opset_;
};
MPA_OP_TRAITS("", "Tile", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "Tile", TileOp, 1, 6, 13);

}  // namespace mpa
