// Range: max(ceil((limit - start) / delta), 0) values start + i * delta. Floating types compute in
// double and round once when stored (numpy's arange on Python scalars, as the ONNX reference does);
// integers use wrapping-free int64 arithmetic.
#include <cmath>

#include "ops/shape_helpers.h"

namespace mpa {

class RangeOp : public OpKernel {
 public:
  explicit RangeOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    require_same_dtype(ctx, 0, 3);
    const DType type = ctx.input(0).dtype();
    const char* names[] = {"start", "limit", "delta"};
    for (size_t i = 0; i < 3; ++i)
      if (ctx.input(i).numel() != 1)
        fail(node.label() + ": " + names[i] + " must be a scalar, got shape " + shape_str(ctx.input(i).shape()));
    if (type == DType::Bool) fail(node.label() + ": bool inputs are not supported");
    if (dtype_is_float(type)) {
      const double start = ctx.input(0).to_double_vector()[0], limit = ctx.input(1).to_double_vector()[0],
                   delta = ctx.input(2).to_double_vector()[0];
      if (delta == 0) fail(node.label() + ": delta is 0");
      const double count = std::ceil((limit - start) / delta);
      if (!std::isfinite(count) || count > 4.0e18)
        fail(node.label() + ": range from " + std::to_string(start) + " to " + std::to_string(limit) + " by " +
             std::to_string(delta) + " has no finite length");
      const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
      Tensor& out = allocate_checked(ctx, 0, type, {n});
      visit_float(type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = out.data<T>();
        for (int64_t i = 0; i < n; ++i)
          o[i] = store<T>(static_cast<compute_t<T>>(start + static_cast<double>(i) * delta));
      });
      return;
    }
    const int64_t start = ctx.input(0).to_int64_vector()[0], limit = ctx.input(1).to_int64_vector()[0],
                  delta = ctx.input(2).to_int64_vector()[0];
    if (delta == 0) fail(node.label() + ": delta is 0");
    // count = ceil(|limit - start| / |delta|) in unsigned arithmetic (the difference may exceed int64).
    uint64_t n = 0;
    if (delta > 0 && limit > start)
      n = (static_cast<uint64_t>(limit) - static_cast<uint64_t>(start) - 1) / static_cast<uint64_t>(delta) + 1;
    if (delta < 0 && limit < start)
      n = (static_cast<uint64_t>(start) - static_cast<uint64_t>(limit) - 1) /
              (static_cast<uint64_t>(-(delta + 1)) + 1) +
          1;
    if (n > (uint64_t{1} << 62)) fail(node.label() + ": range has " + std::to_string(n) + " elements, too many");
    Tensor& out = allocate_checked(ctx, 0, type, {static_cast<int64_t>(n)});
    visit_dtype(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      uint64_t v = static_cast<uint64_t>(start);
      for (uint64_t i = 0; i < n; ++i, v += static_cast<uint64_t>(delta))
        o[i] = store<T>(static_cast<compute_t<T>>(static_cast<int64_t>(v)));
    });
  }
};
MPA_OP_TRAITS("", "Range", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Range", RangeOp, 11, 27);

}  // namespace mpa
