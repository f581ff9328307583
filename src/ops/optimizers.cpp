// The optimizer steps of domain ai.onnx.preview.training (1): Adagrad, Momentum (standard and Nesterov)
// and Adam. Inputs: learning rate R and update count T (scalars), then n tensors X, n gradients G and n of
// each optimizer state (Adagrad: H; Momentum: V; Adam: V, H); outputs n new X, then n of each new state.
// Each tensor group is updated element by element, as the ONNX reference does: the per-node scalars (the
// adjusted learning rate) in double, the element math in compute_t, one rounding per output.
#include <cmath>

#include "ops/compute_buffer.h"
#include "ops/op.h"
#include "ops/shape_helpers.h"

namespace mpa {
namespace {

// The scalars one step uses, from R and T.
struct StepScalars {
  double rate = 0;   // the learning rate, adjusted by T where the rule does
  double scale = 1;  // Momentum: the gradient's coefficient (1 on the first update); Adam: unused
};

// Adagrad: inputs per group X, G, H; outputs X', H'.
struct AdagradRule {
  static constexpr int kInputs = 3, kOutputs = 2;
  explicit AdagradRule(const OpInit& init)
      : decay(init.get_float("decay_factor", 0.0f)),
        epsilon(init.get_float("epsilon", 1e-6f)),
        norm(init.get_float("norm_coefficient", 0.0f)) {}
  StepScalars scalars(double r, int64_t t) const { return {r / (1.0 + static_cast<double>(t) * decay), 1.0}; }
  template <class A>
  void apply(const StepScalars& s, const A* in, A* out) const {
    const A g = static_cast<A>(norm) * in[0] + in[1];
    const A h = in[2] + g * g;
    out[0] = in[0] - static_cast<A>(s.rate) * g / (std::sqrt(h) + static_cast<A>(epsilon));
    out[1] = h;
  }
  double decay, epsilon, norm;
};

// Momentum: inputs per group X, G, V; outputs X', V'.
struct MomentumRule {
  static constexpr int kInputs = 3, kOutputs = 2;
  explicit MomentumRule(const OpInit& init)
      : alpha(init.get_float("alpha", 0.0f)),
        beta(init.get_float("beta", 0.0f)),
        norm(init.get_float("norm_coefficient", 0.0f)) {
    const std::string mode = init.get_string("mode", "standard");
    if (mode != "standard" && mode != "nesterov")
      fail(init.node().label() + ": mode must be standard or nesterov, got '" + mode + "'");
    nesterov = mode == "nesterov";
  }
  StepScalars scalars(double r, int64_t t) const { return {r, t > 0 ? beta : 1.0}; }
  template <class A>
  void apply(const StepScalars& s, const A* in, A* out) const {
    const A g = static_cast<A>(norm) * in[0] + in[1];
    const A v = static_cast<A>(alpha) * in[2] + static_cast<A>(s.scale) * g;
    out[0] = in[0] - static_cast<A>(s.rate) * (nesterov ? g + static_cast<A>(alpha) * v : v);
    out[1] = v;
  }
  double alpha, beta, norm;
  bool nesterov = false;
};

// Adam: inputs per group X, G, V, H; outputs X', V', H'.
struct AdamRule {
  static constexpr int kInputs = 4, kOutputs = 3;
  explicit AdamRule(const OpInit& init)
      : alpha(init.get_float("alpha", 0.9f)),
        beta(init.get_float("beta", 0.999f)),
        epsilon(init.get_float("epsilon", 1e-6f)),
        norm(init.get_float("norm_coefficient", 0.0f)),
        norm_post(init.get_float("norm_coefficient_post", 0.0f)) {}
  StepScalars scalars(double r, int64_t t) const {
    if (t <= 0) return {r, 1.0};  // no bias correction before the first update
    const double n = static_cast<double>(t);
    return {r * std::sqrt(1.0 - std::pow(beta, n)) / (1.0 - std::pow(alpha, n)), 1.0};
  }
  template <class A>
  void apply(const StepScalars& s, const A* in, A* out) const {
    const A g = static_cast<A>(norm) * in[0] + in[1];
    const A v = static_cast<A>(alpha) * in[2] + static_cast<A>(1.0 - alpha) * g;
    const A h = static_cast<A>(beta) * in[3] + static_cast<A>(1.0 - beta) * (g * g);
    const A x = in[0] - static_cast<A>(s.rate) * (v / (std::sqrt(h) + static_cast<A>(epsilon)));
    out[0] = static_cast<A>(1.0 - norm_post) * x;
    out[1] = v;
    out[2] = h;
  }
  double alpha, beta, epsilon, norm, norm_post;
};

template <class Rule>
class OptimizerOp : public OpKernel {
 public:
  explicit OptimizerOp(const OpInit& init) : rule_(init) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const std::string who = node.label();
    const int64_t tensors = (static_cast<int64_t>(ctx.num_inputs()) - 2) / Rule::kInputs;
    if (tensors < 1 || static_cast<int64_t>(ctx.num_inputs()) != 2 + tensors * Rule::kInputs ||
        static_cast<int64_t>(ctx.num_outputs()) != tensors * Rule::kOutputs)
      fail(who + ": expects R, T and " + std::to_string(Rule::kInputs) + " groups of n tensors in, " +
           std::to_string(Rule::kOutputs) + " groups of n tensors out");
    const Tensor& r = ctx.input(0);
    if (r.numel() != 1 || !dtype_is_float(r.dtype())) fail(who + ": R must be a float scalar");
    const StepScalars s = rule_.scalars(r.to_double_vector()[0], scalar_int(node, ctx.input(1), "T"));
    for (int64_t k = 0; k < tensors; ++k) {
      const Tensor* in[Rule::kInputs];
      for (int j = 0; j < Rule::kInputs; ++j) {
        in[j] = &ctx.input(static_cast<size_t>(2 + j * tensors + k));
        if (in[j]->shape() != in[0]->shape() || in[j]->dtype() != in[0]->dtype())
          fail(who + ": input " + std::to_string(2 + j * tensors + k) + " " + shape_str(in[j]->shape()) +
               " differs in shape or type from input " + std::to_string(2 + k) + " " + shape_str(in[0]->shape()));
      }
      Tensor* out[Rule::kOutputs];
      for (int j = 0; j < Rule::kOutputs; ++j)
        out[j] = &allocate_checked(ctx, static_cast<size_t>(j * tensors + k), in[0]->dtype(), in[0]->shape());
      visit_float(in[0]->dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = compute_t<T>;
        const T* src[Rule::kInputs];
        T* dst[Rule::kOutputs];
        for (int j = 0; j < Rule::kInputs; ++j) src[j] = in[j]->template data<T>();
        for (int j = 0; j < Rule::kOutputs; ++j) dst[j] = out[j]->template data<T>();
        parallel_for(in[0]->numel(), 8192, [&](int64_t b, int64_t e) {
          A values[Rule::kInputs], results[Rule::kOutputs];
          for (int64_t i = b; i < e; ++i) {
            for (int j = 0; j < Rule::kInputs; ++j) values[j] = load(src[j][i]);
            rule_.apply(s, values, results);
            for (int j = 0; j < Rule::kOutputs; ++j) dst[j][i] = store<T>(results[j]);
          }
        });
      });
    }
  }

 private:
  Rule rule_;
};

constexpr const char* kTraining = "ai.onnx.preview.training";

}  // namespace

MPA_OP_TRAITS(kTraining, "Adagrad", {.precision = PrecisionClass::Elementwise, .host_inputs = {0, 1}});
MPA_REGISTER_OP(kTraining, "Adagrad", OptimizerOp<AdagradRule>, 1);
MPA_OP_TRAITS(kTraining, "Momentum", {.precision = PrecisionClass::Elementwise, .host_inputs = {0, 1}});
MPA_REGISTER_OP(kTraining, "Momentum", OptimizerOp<MomentumRule>, 1);
MPA_OP_TRAITS(kTraining, "Adam", {.precision = PrecisionClass::Elementwise, .host_inputs = {0, 1}});
MPA_REGISTER_OP(kTraining, "Adam", OptimizerOp<AdamRule>, 1);

}  // namespace mpa
