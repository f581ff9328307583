// Softmax, LogSoftmax, Hardmax. Row math lives in src/kernels/softmax.h.
// Versions 1 and 11: the input is coerced to 2D at `axis` (default 1) and each row of
// prod(shape[axis:]) elements is normalised. Version 13: one axis (default -1), the others are batch dims.
#include "kernels/softmax.h"

#include "ops/compute_buffer.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

// Rows [begin, end) of x viewed as [outer, n, inner]; tmp: scratch for n compute values or null.
template <class Row, class T>
MPA_VECTOR_CLONES void softmax_rows(const T* in, T* out, int64_t begin, int64_t end, int64_t n, int64_t inner,
                                    compute_t<T>* scratch_row) {
  using A = compute_t<T>;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t offset = (r / inner) * n * inner + r % inner;
    A* tmp = scratch_row;
    if constexpr (std::is_same_v<T, A>) {  // float/double contiguous rows keep the exponentials in the output
      if (inner == 1) tmp = out + offset;
    }
    if (inner == 1)
      Row{}(in + offset, out + offset, n, int64_t{1}, tmp);  // constant stride: contiguous loops
    else
      Row{}(in + offset, out + offset, n, inner, tmp);
  }
}

template <class Row>
class SoftmaxFamilyOp : public OpKernel {
 public:
  explicit SoftmaxFamilyOp(const OpInit& init)
      : coerce_2d_(init.opset() < 13), axis_(init.get_int("axis", init.opset() < 13 ? 1 : -1)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const AxisSplit s = softmax_rows_of(x.shape(), axis_, coerce_2d_, ctx.node().label());
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const int64_t rows = s.outer * s.inner, n = s.n, inner = s.inner;
      parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        softmax_rows<Row>(in, out, b, e, n, inner, scratch<A>(0, static_cast<size_t>(n)));
      });
    });
  }

 private:
  bool coerce_2d_;
  int64_t axis_;
};

using SoftmaxKernel = SoftmaxFamilyOp<SoftmaxRow>;
using LogSoftmaxKernel = SoftmaxFamilyOp<LogSoftmaxRow>;
using HardmaxKernel = SoftmaxFamilyOp<HardmaxRow>;

}  // namespace

MPA_OP_TRAITS("", "Softmax", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "Softmax", SoftmaxKernel, 1, 11, 13);
MPA_OP_TRAITS("", "LogSoftmax", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "LogSoftmax", LogSoftmaxKernel, 1, 11, 13);
MPA_OP_TRAITS("", "Hardmax", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Hardmax", HardmaxKernel, 1, 11, 13);

}  // namespace mpa
