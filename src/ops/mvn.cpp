// MeanVarianceNormalization (9, 13): (x - mean) / (sqrt(variance) + 1e-9) with mean and population
// variance over `axes` (default {0, 2, 3}). Statistics: the shared reduction (Welford/Chan moments), then
// a broadcast pass.
#include "backends/cpu/broadcast_loops.h"
#include "kernels/reduce.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

class MeanVarianceNormalizationOp : public OpKernel {
 public:
  explicit MeanVarianceNormalizationOp(const OpInit& init) : axes_(init.get_ints("axes", {0, 2, 3})) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    const ReducePlan plan(x.shape(), normalize_axes(axes_, x.rank(), who), true);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      std::vector<A> mean(static_cast<size_t>(plan.out_count())), denom(mean.size());
      const MomentsF<T> moments{};
      run_reduction(plan, x.data<T>(), moments, [&](int64_t o, const typename MomentsF<T>::Acc& a) {
        mean[static_cast<size_t>(o)] = static_cast<A>(moments.mean(a));
        denom[static_cast<size_t>(o)] = static_cast<A>(dmath::sqrt(moments.variance(a))) + static_cast<A>(1e-9);
      });
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for_each_broadcast_run(x.shape(), {x.shape(), plan.kept_shape()},
                             [&](int64_t o, const int64_t* offsets, const BroadcastRuns& runs) {
                               const int64_t step = runs.step(1);
                               for (int64_t j = 0; j < runs.run_length(); ++j) {
                                 const size_t k = static_cast<size_t>(offsets[1] + j * step);
                                 out[o + j] = store<T>((load(in[offsets[0] + j]) - mean[k]) / denom[k]);
                               }
                             });
    });
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

MPA_OP_TRAITS("", "MeanVarianceNormalization", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "MeanVarianceNormalization", MeanVarianceNormalizationOp, 9, 13);

}  // namespace mpa
