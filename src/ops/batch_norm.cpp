// BatchNormalization: y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c] over x [N, C, D1...].
// Inference uses the given running statistics. Training (training_mode=1 from opset 14; before that, when
// any output beyond Y is requested: old exporters leave is_test unset in inference models) uses the batch
// statistics and also returns running_mean/var = running * momentum + batch * (1 - momentum); opsets
// below 14 additionally return the batch mean and variance (saved_mean, saved_var).
// spatial=0 (opsets 1-7): statistics per activation, i.e. scale etc. of shape [C, D1...].
#include "kernels/normalize.h"
#include "kernels/reduce.h"
#include "ops/normalize.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

// Inference with given statistics as an epilogue (ops/op.h): each channel's values normalised as compute()
// normalises them.
class BatchNormalizationEpilogue : public Epilogue {
 public:
  BatchNormalizationEpilogue(std::vector<float> scale, std::vector<float> bias, std::vector<RowStats<float>> stats)
      : scale_(std::move(scale)), bias_(std::move(bias)), stats_(std::move(stats)) {}
  void apply(float* values, int64_t n, int64_t channel, int64_t) const override {
    normalize_channels(values, values, channel, 1, n, stats_[static_cast<size_t>(channel)], scale_.data(),
                       bias_.data());
  }

 private:
  std::vector<float> scale_, bias_;
  std::vector<RowStats<float>> stats_;
};

// Per channel, the statistics compute() normalises with: mean and 1 / sqrt(var + epsilon).
template <class A>
std::vector<RowStats<A>> channel_stats(const std::vector<A>& mean, const std::vector<A>& var, A eps) {
  std::vector<RowStats<A>> stats(mean.size());
  for (size_t c = 0; c < stats.size(); ++c) stats[c] = {mean[c], A(1) / dmath::sqrt(var[c] + eps)};
  return stats;
}

class BatchNormalizationOp : public OpKernel {
 public:
  explicit BatchNormalizationOp(const OpInit& init)
      : opset_(init.opset()),
        epsilon_(init.get_float("epsilon", 1e-5f)),
        momentum_(init.get_float("momentum", 0.9f)),
        training_attr_(init.opset() >= 14 && init.get_int("training_mode", 0) != 0),
        spatial_(init.opset() < 9 ? init.get_int("spatial", 1) != 0 : true) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    const Tensor &scale_t = ctx.input(1), &bias_t = ctx.input(2), &mean_t = ctx.input(3), &var_t = ctx.input(4);
    // Plain variables, not structured bindings: clang 14 (the fuzz build) cannot capture those in the lambdas below.
    const ChannelSplit channels = batch_norm_channels(who, x, spatial_, {&scale_t, &bias_t, &mean_t, &var_t});
    const int64_t N = channels.N, C = channels.C, S = channels.S;
    bool training = training_attr_;
    if (opset_ < 14) {
      for (size_t i = 1; i < ctx.num_outputs(); ++i) training = training || ctx.output_requested(i);
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const std::vector<A> scale = param_vector<A>(scale_t, who), bias = param_vector<A>(bias_t, who);
      std::vector<A> mean = param_vector<A>(mean_t, who), var = param_vector<A>(var_t, who);
      const A eps = static_cast<A>(epsilon_);
      if (training) {
        const std::vector<A> running_mean = mean, running_var = var;
        const ReducePlan plan({N, C, S}, {0, 2}, true);
        const MomentsF<T> moments{};
        run_reduction(plan, x.data<T>(), moments, [&](int64_t c, const typename MomentsF<T>::Acc& a) {
          mean[static_cast<size_t>(c)] = static_cast<A>(moments.mean(a));
          var[static_cast<size_t>(c)] = static_cast<A>(moments.variance(a));
        });
        const A m = static_cast<A>(momentum_);
        auto write = [&](size_t out, const std::vector<A>& values) {
          if (out >= ctx.num_outputs() || !ctx.output_requested(out)) return;
          Tensor& t = ctx.allocate_output(out, mean_t.dtype(), mean_t.shape());
          visit_float(t.dtype(), [&](auto ptag) {
            using P = typename decltype(ptag)::type;
            P* p = t.data<P>();
            for (size_t i = 0; i < values.size(); ++i) p[i] = store<P>(static_cast<compute_t<P>>(values[i]));
          });
        };
        std::vector<A> new_mean(mean.size()), new_var(var.size());
        for (size_t c = 0; c < mean.size(); ++c) {
          new_mean[c] = running_mean[c] * m + mean[c] * (A(1) - m);
          new_var[c] = running_var[c] * m + var[c] * (A(1) - m);
        }
        write(1, new_mean);
        write(2, new_var);
        write(3, mean);
        write(4, var);
      }
      const std::vector<RowStats<A>> stats = channel_stats(mean, var, eps);
      normalize_channel_groups(x.data<T>(), y.data<T>(), N, C, S, C, scale.data(), bias.data(),
                               [&](int64_t, int64_t c, const T*, int64_t) { return stats[static_cast<size_t>(c)]; });
    });
  }

  // Inference over channels at dimension 1 (spatial), every parameter float32 with one value per channel.
  // Training (training_mode, or an opset below 14 with more outputs named: the executor makes epilogues of
  // nodes with one output named) normalises with the batch's own statistics: not an epilogue.
  std::unique_ptr<Epilogue> as_epilogue(size_t from, const std::vector<const Tensor*>& inputs,
                                        const Shape& shape) const override {
    if (from != 0 || training_attr_ || !spatial_ || shape.size() < 2 || inputs.size() < 5) return nullptr;
    const int64_t C = shape[1];
    for (size_t i = 1; i < 5; ++i)
      if (!inputs[i] || inputs[i]->dtype() != DType::Float32 || inputs[i]->shape() != Shape{C}) return nullptr;
    const auto values = [&](size_t i) {
      const float* p = inputs[i]->data<float>();
      return std::vector<float>(p, p + C);
    };
    return std::make_unique<BatchNormalizationEpilogue>(values(1), values(2),
                                                        channel_stats(values(3), values(4), epsilon_));
  }

 private:
  int64_t opset_;
  float epsilon_, momentum_;
  bool training_attr_, spatial_;
};

}  // namespace

MPA_OP_TRAITS("", "BatchNormalization", {.precision = PrecisionClass::Elementwise, .host_inputs = {1, 2, 3, 4}});
MPA_REGISTER_OP("", "BatchNormalization", BatchNormalizationOp, 1, 6, 7, 9, 14, 15);

}  // namespace mpa
