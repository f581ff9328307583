// Shape and Size: metadata as int64 tensors.
#include <algorithm>

#include "ops/shape_helpers.h"

namespace mpa {

// Since opset 15, start/end select a slice of the dims (negative counts from the back, clamped).
class ShapeOp : public OpKernel {
 public:
  explicit ShapeOp(const OpInit& init) : start_(init.get_int("start", 0)), end_(init.get_int("end", INT64_MAX)) {}
  void compute(KernelContext& ctx) const override {
    const Shape& s = ctx.input(0).shape();
    const int64_t rank = static_cast<int64_t>(s.size());
    auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp(start_), end = std::max(start, clamp(end_));
    Tensor& out = allocate_checked(ctx, 0, DType::Int64, {end - start});
    std::copy(s.begin() + start, s.begin() + end, out.data<int64_t>());
  }

 private:
  int64_t start_, end_;
};
MPA_OP_TRAITS("", "Shape", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Shape", ShapeOp, 1, 13, 15, 19, 21, 23, 24, 25);

class SizeOp : public OpKernel {
 public:
  explicit SizeOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override { ctx.set_output(0, Tensor::scalar<int64_t>(ctx.input(0).numel())); }
};
MPA_OP_TRAITS("", "Size", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Size", SizeOp, 1, 13, 19, 21, 23, 24, 25);

}  // namespace mpa
