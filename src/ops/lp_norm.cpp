// LpNormalization (1, 22): x / ||x||_p along one axis (p = 1 or 2), 0 where the norm is 0.
#include "kernels/normalize.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

class LpNormalizationOp : public OpKernel {
 public:
  explicit LpNormalizationOp(const OpInit& init) : axis_(init.get_int("axis", -1)), p_(init.get_int("p", 2)) {
    if (p_ != 1 && p_ != 2) fail(init.node().label() + ": p must be 1 or 2, got " + std::to_string(p_));
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    const AxisSplit s = split_at_axis(x.shape(), normalize_axis(axis_, x.rank(), who));
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      parallel_for(s.outer * s.inner, std::max<int64_t>(1, 16384 / std::max<int64_t>(s.n, 1)),
                        [&](int64_t b, int64_t e) {
                          for (int64_t l = b; l < e; ++l) {
                            const int64_t offset = (l / s.inner) * s.n * s.inner + l % s.inner;
                            LpNormalizeRow{}(in + offset, out + offset, s.n, s.inner, p_);
                          }
                        });
    });
  }

 private:
  int64_t axis_, p_;
};

}  // namespace

MPA_OP_TRAITS("", "LpNormalization", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "LpNormalization", LpNormalizationOp, 1, 22);

}  // namespace mpa
