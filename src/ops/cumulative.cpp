// CumSum (11, 14) and CumProd (26): running sum or product along the axis given as a scalar int32/int64
// input; exclusive and reverse attributes. CumSum 14 adds float16/bfloat16 (accumulated in float, rounded
// once per output). Both fold the Reduce accumulators of src/kernels/reduce.h (scan_row).
#include "kernels/reduce.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

template <template <class> class Fold>
class CumulativeOp : public OpKernel {
 public:
  explicit CumulativeOp(const OpInit& init)
      : exclusive_(init.get_int("exclusive", 0) != 0), reverse_(init.get_int("reverse", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& axis_t = ctx.input(1);
    const std::string who = ctx.node().label();
    if (!(axis_t.numel() == 1 && (axis_t.dtype() == DType::Int32 || axis_t.dtype() == DType::Int64)))
      fail(who + ": axis must be a scalar int32/int64 tensor");
    if (!(x.rank() > 0)) fail(who + ": input must have rank >= 1");
    const int64_t axis = normalize_axis(axis_t.to_int64_vector()[0], x.rank(), who);
    const AxisSplit s = split_at_axis(x.shape(), axis);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        fail(who + ": bool input is not allowed");
      } else {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        const int64_t lines = s.outer * s.inner;
        parallel_for(lines, std::max<int64_t>(1, 16384 / std::max<int64_t>(s.n, 1)), [&](int64_t b, int64_t e) {
          for (int64_t l = b; l < e; ++l) {
            const int64_t offset = (l / s.inner) * s.n * s.inner + l % s.inner;
            scan_row(Fold<T>{}, in + offset, out + offset, s.n, s.inner, exclusive_, reverse_);
          }
        });
      }
    });
  }

 private:
  bool exclusive_, reverse_;
};

using CumSumOp = CumulativeOp<ReduceSumF>;
using CumProdOp = CumulativeOp<ReduceProdF>;

}  // namespace

MPA_OP_TRAITS("", "CumSum", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "CumSum", CumSumOp, 11, 14);
// A running product rounds once per output like a running sum; its float products run in FP32.
MPA_OP_TRAITS("", "CumProd", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "CumProd", CumProdOp, 26);

}  // namespace mpa
