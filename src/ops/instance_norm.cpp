// InstanceNormalization (1, 6, 22): each (instance, channel) plane of x [N, C, D1...] is normalised by its
// own mean and variance, then scaled and shifted per channel.
#include "kernels/normalize.h"
#include "ops/normalize.h"
#include "ops/op.h"

namespace mpa {
namespace {

class InstanceNormalizationOp : public OpKernel {
 public:
  explicit InstanceNormalizationOp(const OpInit& init) : epsilon_(init.get_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    if (!(x.rank() >= 2)) fail(who + ": input must have rank >= 2 (N, C, ...), got " + shape_str(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1), S = x.numel() / std::max<int64_t>(N * C, 1);
    const Tensor& scale_t = ctx.input(1);
    const Tensor& bias_t = ctx.input(2);
    if (!(scale_t.numel() == C && bias_t.numel() == C))
      fail(who + ": scale and B must have C = " + std::to_string(C) + " elements");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const std::vector<A> scale = param_vector<A>(scale_t, who), bias = param_vector<A>(bias_t, who);
      const A eps = static_cast<A>(epsilon_);
      normalize_channel_groups(
          x.data<T>(), y.data<T>(), N, C, S, C, scale.data(), bias.data(),
          [&](int64_t, int64_t, const T* row, int64_t len) { return MeanInvStdRow{}(row, len, eps); });
    });
  }

 private:
  float epsilon_;
};

}  // namespace

MPA_OP_TRAITS("", "InstanceNormalization", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "InstanceNormalization", InstanceNormalizationOp, 1, 6, 22);

}  // namespace mpa
