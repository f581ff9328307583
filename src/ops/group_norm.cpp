// GroupNormalization: x [N, C, D1...] with C split into num_groups contiguous groups; each (instance,
// group) is normalised by its own mean and variance. Opset 18: scale and bias have one value per group;
// opset 21: one per channel (and stash_type, which only selects float statistics: the runtime always
// computes them in float, double for float64).
#include "kernels/normalize.h"
#include "ops/normalize.h"
#include "ops/op.h"

namespace mpa {
namespace {

class GroupNormalizationOp : public OpKernel {
 public:
  explicit GroupNormalizationOp(const OpInit& init)
      : per_channel_params_(init.opset() >= 21),
        num_groups_(init.require_int("num_groups")),
        epsilon_(init.get_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    if (!(x.rank() >= 2)) fail(who + ": input must have rank >= 2 (N, C, ...), got " + shape_str(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1), S = x.numel() / std::max<int64_t>(N * C, 1), G = num_groups_;
    if (!(G > 0 && C % G == 0))
      fail(who + ": num_groups " + std::to_string(G) + " must divide the " + std::to_string(C) + " channels");
    const Tensor& scale_t = ctx.input(1);
    const Tensor& bias_t = ctx.input(2);
    const int64_t params = per_channel_params_ ? C : G;
    if (!(scale_t.numel() == params && bias_t.numel() == params))
      fail(who + ": scale and bias must have " + std::to_string(params) + " elements (" +
           (per_channel_params_ ? "one per channel" : "one per group") + ")");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      std::vector<A> scale = param_vector<A>(scale_t, who), bias = param_vector<A>(bias_t, who);
      if (!per_channel_params_) {  // one value per group: repeat it for the group's channels
        std::vector<A> s(static_cast<size_t>(C)), b(static_cast<size_t>(C));
        for (int64_t c = 0; c < C; ++c) {
          s[static_cast<size_t>(c)] = scale[static_cast<size_t>(c / (C / G))];
          b[static_cast<size_t>(c)] = bias[static_cast<size_t>(c / (C / G))];
        }
        scale.swap(s);
        bias.swap(b);
      }
      const A eps = static_cast<A>(epsilon_);
      normalize_channel_groups(
          x.data<T>(), y.data<T>(), N, C, S, G, scale.data(), bias.data(),
          [&](int64_t, int64_t, const T* row, int64_t len) { return MeanInvStdRow{}(row, len, eps); });
    });
  }

 private:
  bool per_channel_params_;
  int64_t num_groups_;
  float epsilon_;
};

}  // namespace

MPA_OP_TRAITS("", "GroupNormalization", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "GroupNormalization", GroupNormalizationOp, 18, 21);

}  // namespace mpa
