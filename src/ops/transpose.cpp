// Transpose and the ops that are a transpose of a reshaped view: DepthToSpace, SpaceToDepth.
#include "ops/transpose.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

// out = input viewed as `view` and permuted by perm, stored with shape out_shape.
void permute_into(KernelContext& ctx, const Tensor& in, const Shape& view, const std::vector<int64_t>& perm,
                  const Shape& out_shape) {
  Tensor& out = allocate_checked(ctx, 0, in.dtype(), out_shape);
  permute_copy(out.raw(), in.raw(), dtype_size(in.dtype()), view, perm);
}

}  // namespace

std::vector<int64_t> TransposeAttrs::perm(const Node& node, const Shape& in) const {
  const size_t rank = in.size();
  std::vector<int64_t> perm(rank);
  if (has_perm_) {
    perm = perm_;
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> expected(rank);
    std::iota(expected.begin(), expected.end(), 0);
    if (sorted != expected)
      fail(node.label() + ": perm " + shape_str(perm) + " is not a permutation of the " + std::to_string(rank) +
           " axes of input " + shape_str(in));
  } else {
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  }
  return perm;
}

class TransposeOp : public OpKernel {
 public:
  explicit TransposeOp(const OpInit& init) : attrs_(init) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const size_t rank = static_cast<size_t>(in.rank());
    const std::vector<int64_t> perm = attrs_.perm(ctx.node(), in.shape());
    Shape out_shape(rank);
    bool identity = true;
    for (size_t i = 0; i < rank; ++i) {
      out_shape[i] = in.shape()[static_cast<size_t>(perm[i])];
      identity = identity && perm[i] == static_cast<int64_t>(i);
    }
    if (identity) {
      ctx.set_output(0, in);  // nothing moves: alias
      return;
    }
    permute_into(ctx, in, in.shape(), perm, out_shape);
  }

 private:
  TransposeAttrs attrs_;
};
MPA_OP_TRAITS("", "Transpose",
              {.rounding_commutes = true, .moves_values_only = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Transpose", TransposeOp, 1, 13, 21, 23, 24, 25);

namespace {
// Input must be 4-D NCHW; returns its dims after checking the block size.
std::array<int64_t, 4> nchw(const KernelContext& ctx, int64_t blocksize) {
  const Tensor& in = ctx.input(0);
  if (in.rank() != 4) fail(ctx.node().label() + ": expects a 4-D input, got " + shape_str(in.shape()));
  // At most 2^31, so that blocksize^2 cannot wrap.
  if (!(blocksize >= 1 && blocksize <= (int64_t{1} << 31)))
    fail(ctx.node().label() + ": blocksize must lie in 1..2^31, got " + std::to_string(blocksize));
  return {in.dim(0), in.dim(1), in.dim(2), in.dim(3)};
}
}  // namespace

class DepthToSpaceOp : public OpKernel {
 public:
  explicit DepthToSpaceOp(const OpInit& init)
      : blocksize_(init.require_int("blocksize")), crd_(init.get_string("mode", "DCR") == "CRD") {
    const std::string mode = init.get_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") fail(init.node().label() + ": unknown mode '" + mode + "'");
  }
  void compute(KernelContext& ctx) const override {
    const auto [n, c, h, w] = nchw(ctx, blocksize_);
    const int64_t b = blocksize_;
    if (c % (b * b) != 0)
      fail(ctx.node().label() + ": channels " + std::to_string(c) +
           " not divisible by blocksize^2 = " + std::to_string(b * b));
    const int64_t oc = c / (b * b);
    const Shape out{n, oc, h * b, w * b};
    if (crd_)
      permute_into(ctx, ctx.input(0), {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
    else
      permute_into(ctx, ctx.input(0), {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, out);
  }

 private:
  int64_t blocksize_;
  bool crd_;
};
MPA_OP_TRAITS("", "DepthToSpace", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "DepthToSpace", DepthToSpaceOp, 1, 11, 13);

class SpaceToDepthOp : public OpKernel {
 public:
  explicit SpaceToDepthOp(const OpInit& init) : blocksize_(init.require_int("blocksize")) {}
  void compute(KernelContext& ctx) const override {
    const auto [n, c, h, w] = nchw(ctx, blocksize_);
    const int64_t b = blocksize_;
    if (h % b != 0 || w % b != 0)
      fail(ctx.node().label() + ": spatial size " + std::to_string(h) + "x" + std::to_string(w) +
           " not divisible by blocksize " + std::to_string(b));
    permute_into(ctx, ctx.input(0), {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, {n, c * b * b, h / b, w / b});
  }

 private:
  int64_t blocksize_;
};
MPA_OP_TRAITS("", "SpaceToDepth", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "SpaceToDepth", SpaceToDepthOp, 1, 13);

}  // namespace mpa
