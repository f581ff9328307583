// Trilu and EyeLike: matrices defined by their diagonals. Zero is all-zero bytes in every stored type.
#include <algorithm>
#include <cstring>

#include "common/parallel.h"
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

// Keeps the elements with j - i >= k (upper) or j - i <= k (lower) of every trailing matrix.
class TriluOp : public OpKernel {
 public:
  explicit TriluOp(const OpInit& init) : upper_(init.get_int("upper", 1) != 0) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.rank() < 2) fail(ctx.node().label() + ": expects rank >= 2, got " + shape_str(in.shape()));
    const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
    int64_t k = ctx.has_input(1) ? scalar_int(ctx.node(), ctx.input(1), "k") : 0;
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);  // beyond this every row is all kept or all zeroed
    Tensor& out = allocate_checked(ctx, 0, in.dtype(), in.shape());
    if (out.numel() == 0) return;
    const int64_t e = static_cast<int64_t>(dtype_size(in.dtype()));
    const int64_t total_rows = in.numel() / cols;
    parallel_for(total_rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % rows;
        // Kept columns: [split, cols) for upper, [0, split) for lower.
        const int64_t split = std::clamp<int64_t>(upper_ ? i + k : i + k + 1, 0, cols);
        const int64_t keep_begin = upper_ ? split : 0, keep_end = upper_ ? cols : split;
        std::byte* o = element_ptr(out, r * cols);
        const std::byte* s = element_ptr(in, r * cols);
        std::memset(o, 0, static_cast<size_t>(cols * e));
        std::memcpy(o + keep_begin * e, s + keep_begin * e, static_cast<size_t>((keep_end - keep_begin) * e));
      }
    });
  }

 private:
  bool upper_;
};
MPA_OP_TRAITS("", "Trilu", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Trilu", TriluOp, 14);

// Ones on the diagonal j = i + k of a 2-D tensor shaped like the input; dtype attribute or the input's.
class EyeLikeOp : public OpKernel {
 public:
  explicit EyeLikeOp(const OpInit& init)
      : dtype_(static_cast<int32_t>(init.get_int("dtype", 0))), k_(init.get_int("k", 0)) {
    if (dtype_ != 0 && !dtype_is_supported(dtype_))
      throw UnsupportedType(init.node().label() + ": dtype " + onnx_type_name(dtype_) + " is not supported");
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.rank() != 2) fail(ctx.node().label() + ": expects a 2-D input, got " + shape_str(in.shape()));
    const DType type = dtype_ != 0 ? static_cast<DType>(dtype_) : in.dtype();
    Tensor& out = allocate_checked(ctx, 0, type, in.shape());
    std::memset(out.raw(), 0, out.nbytes());
    const int64_t rows = in.dim(0), cols = in.dim(1);
    const int64_t k = std::clamp<int64_t>(k_, -rows, cols);  // beyond: no diagonal element at all
    visit_dtype(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      const T one = store<T>(static_cast<compute_t<T>>(1));
      for (int64_t i = std::max<int64_t>(0, -k); i < rows && i < cols - k; ++i) o[i * cols + i + k] = one;
    });
  }

 private:
  int32_t dtype_;
  int64_t k_;
};
MPA_OP_TRAITS("", "EyeLike", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "EyeLike", EyeLikeOp, 9, 22);

}  // namespace mpa
