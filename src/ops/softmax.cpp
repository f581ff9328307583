// Softmax, LogSoftmax, Hardmax. Row math lives in src/kernels/softmax.h.
// Versions 1 and 11: the input is coerced to 2D at `axis` (default 1) and each row of
// prod(shape[axis:]) elements is normalised. Version 13: one axis (default -1), the others are batch dims.
#include "kernels/softmax.h"

#include "ops/compute_buffer.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

template <class Row> class SoftmaxFamilyOp : public OpKernel {
 public:
  explicit SoftmaxFamilyOp(const OpInit& init)
      : coerce_2d_(init.opset() < 13), axis_(init.get_int("axis", init.opset() < 13 ? 1 : -1)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    AxisSplit s;
    if (x.rank() > 0) {
      const int64_t axis = normalize_axis(axis_, x.rank(), who);
      s = split_at_axis(x.shape(), axis);
      if (coerce_2d_) {
        s.n *= s.inner;
        s.inner = 1;
      }
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const int64_t rows = s.outer * s.inner, n = s.n, inner = s.inner;
      cpu::parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        A* tmp = nullptr;
        // Float/double contiguous rows keep the exponentials in the output itself.
        const bool in_place = std::is_same_v<T, A> && inner == 1;
        if (!in_place) tmp = scratch<A>(0, static_cast<size_t>(n));
        for (int64_t r = b; r < e; ++r) {
          const int64_t offset = (r / inner) * n * inner + r % inner;
          if (in_place) tmp = reinterpret_cast<A*>(out + offset);
          Row{}(in + offset, out + offset, n, inner, tmp);
        }
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

MPA_REGISTER_OP("", "Softmax", SoftmaxKernel, 1, 11, 13);
MPA_REGISTER_OP("", "LogSoftmax", LogSoftmaxKernel, 1, 11, 13);
MPA_REGISTER_OP("", "Hardmax", HardmaxKernel, 1, 11, 13);

}  // namespace mpa
