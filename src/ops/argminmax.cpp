// ArgMax and ArgMin: int64 index of the largest/smallest element along one axis.
// Versions: 1 (axis, keepdims), 11 (negative axis), 12 (select_last_index), 13 (bfloat16). The first NaN
// along the axis wins, as numpy does.
#include "kernels/reduce.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

template <bool kMax>
class ArgOp : public OpKernel {
 public:
  explicit ArgOp(const OpInit& init)
      : axis_(init.get_int("axis", 0)),
        keepdims_(init.get_int("keepdims", 1) != 0),
        select_last_(init.opset() >= 12 && init.get_int("select_last_index", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    const int64_t axis = normalize_axis(axis_, x.rank(), who);
    const AxisSplit s = split_at_axis(x.shape(), axis);
    Shape out_shape;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (i != axis)
        out_shape.push_back(x.dim(static_cast<int>(i)));
      else if (keepdims_)
        out_shape.push_back(1);
    }
    Tensor& y = ctx.allocate_output(0, DType::Int64, out_shape);
    const int64_t rows = s.outer * s.inner;
    if (rows == 0) return;
    if (!(s.n > 0)) fail(who + ": cannot take the arg" + (kMax ? "max" : "min") + " of an empty axis");
    int64_t* out = y.data<int64_t>();
    const ArgBetter<kMax> better{select_last_};
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      parallel_for(rows, std::max<int64_t>(1, 16384 / s.n), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t o = r / s.inner, j = r % s.inner;
          out[r] = arg_reduce_row<kMax>(in + o * s.n * s.inner + j, s.n, s.inner, better);
        }
      });
    });
  }

 private:
  int64_t axis_;
  bool keepdims_, select_last_;
};

using ArgMaxKernel = ArgOp<true>;
using ArgMinKernel = ArgOp<false>;

}  // namespace

MPA_OP_TRAITS("", "ArgMax", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "ArgMax", ArgMaxKernel, 1, 11, 12, 13);
MPA_OP_TRAITS("", "ArgMin", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "ArgMin", ArgMinKernel, 1, 11, 12, 13);

}  // namespace mpa
