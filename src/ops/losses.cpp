// NegativeLogLikelihoodLoss (12, 13, 22) and SoftmaxCrossEntropyLoss (12, 13): input [N, C, d1..dk], target
// [N, d1..dk] of class indices (int32/int64), optional per-class weight [C]; reduction none (loss per
// target element), sum, or mean (sum divided by the sum of the weights of the targets not ignored). A target
// equal to ignore_index contributes nothing; any other target outside [0, C) is an error.
// SoftmaxCrossEntropyLoss is NegativeLogLikelihoodLoss on LogSoftmax(scores, axis 1), which it may also
// output; the log-probabilities are stored in the scores' type before the loss reads them, as PyTorch's
// cross_entropy (log_softmax then nll_loss) does.
// Loss terms and sums are in compute_t (float for 16-bit types), rounded once into the output.
#include "kernels/softmax.h"
#include "ops/compute_buffer.h"
#include "ops/op.h"

namespace mpa {
namespace {

enum class Reduction { None, Sum, Mean };

// The attributes both losses share.
struct LossAttributes {
  explicit LossAttributes(const OpInit& init)
      : has_ignore(init.has("ignore_index")), ignore_index(init.get_int("ignore_index", 0)) {
    const std::string r = init.get_string("reduction", "mean");
    if (r == "none")
      reduction = Reduction::None;
    else if (r == "sum")
      reduction = Reduction::Sum;
    else if (r == "mean")
      reduction = Reduction::Mean;
    else
      fail(init.node().label() + ": reduction must be none, sum or mean, got '" + r + "'");
  }
  Reduction reduction = Reduction::Mean;
  bool has_ignore;
  int64_t ignore_index;
};

// [N, C, D] view of the input, D the product of d1..dk; checks the target and weight shapes against it.
struct LossGeometry {
  int64_t n = 0, c = 0, d = 1;
};
LossGeometry loss_geometry(const Tensor& input, const Tensor& target, const Tensor* weight, const std::string& who) {
  if (input.rank() < 2) fail(who + ": input must have rank >= 2 ([N, C, d1..dk]), got " + shape_str(input.shape()));
  Shape expected = input.shape();
  expected.erase(expected.begin() + 1);
  if (target.shape() != expected)
    fail(who + ": target shape " + shape_str(target.shape()) + " does not match input " + shape_str(input.shape()) +
         " (expected " + shape_str(expected) + ")");
  if (target.dtype() != DType::Int32 && target.dtype() != DType::Int64)
    fail(who + ": target must be int32 or int64, got " + dtype_name(target.dtype()));
  LossGeometry g;
  g.n = input.shape()[0];
  g.c = input.shape()[1];
  for (int i = 2; i < input.rank(); ++i) g.d *= input.shape()[i];
  if (weight && !(weight->rank() == 1 && weight->shape()[0] == g.c && weight->dtype() == input.dtype()))
    fail(who + ": weight must be a 1-D tensor of " + std::to_string(g.c) + " " + dtype_name(input.dtype()) +
         " values, got " + dtype_name(weight->dtype()) + " " + shape_str(weight->shape()));
  return g;
}

// Writes output 0 of ctx: -log_prob[n, target, d] * weight[target] per target element, reduced.
template <class T>
void negative_log_likelihood(const T* log_prob, const Tensor& target_t, const T* weight, const LossGeometry& g,
                             const LossAttributes& attrs, KernelContext& ctx) {
  using A = compute_t<T>;
  const std::string who = ctx.node().label();
  const std::vector<int64_t> target = target_t.to_int64_vector();
  const int64_t count = g.n * g.d;
  std::vector<A> loss(static_cast<size_t>(count)), weight_of(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = target[static_cast<size_t>(i)];
    if (attrs.has_ignore && t == attrs.ignore_index) {
      loss[static_cast<size_t>(i)] = A(0);
      weight_of[static_cast<size_t>(i)] = A(0);
      continue;
    }
    if (t < 0 || t >= g.c)
      fail(who + ": target " + std::to_string(t) + " at flat index " + std::to_string(i) + " is outside [0, " +
           std::to_string(g.c) + ") and is not ignore_index");
    const A w = weight ? load(weight[t]) : A(1);
    const int64_t batch = i / g.d, position = i % g.d;
    loss[static_cast<size_t>(i)] = -load(log_prob[(batch * g.c + t) * g.d + position]) * w;
    weight_of[static_cast<size_t>(i)] = w;
  }
  if (attrs.reduction == Reduction::None) {
    Tensor& y = ctx.allocate_output(0, dtype_of<T>, target_t.shape());
    narrow(loss.data(), y.data<T>(), count);
    return;
  }
  // Sequential sums: the order depends only on the shape.
  A total = A(0), total_weight = A(0);
  for (int64_t i = 0; i < count; ++i) {
    total += loss[static_cast<size_t>(i)];
    total_weight += weight_of[static_cast<size_t>(i)];
  }
  Tensor& y = ctx.allocate_output(0, dtype_of<T>, {});
  y.data<T>()[0] = store<T>(attrs.reduction == Reduction::Sum ? total : total / total_weight);
}

class NegativeLogLikelihoodLossOp : public OpKernel {
 public:
  explicit NegativeLogLikelihoodLossOp(const OpInit& init) : attrs_(init) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& target = ctx.input(1);
    const Tensor* weight = ctx.optional_input(2);
    const LossGeometry g = loss_geometry(input, target, weight, ctx.node().label());
    visit_float(input.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      negative_log_likelihood(input.data<T>(), target, weight ? weight->data<T>() : nullptr, g, attrs_, ctx);
    });
  }

 private:
  LossAttributes attrs_;
};

class SoftmaxCrossEntropyLossOp : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyLossOp(const OpInit& init) : attrs_(init) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& scores = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    const Tensor* weight = ctx.optional_input(2);
    const LossGeometry g = loss_geometry(scores, labels, weight, ctx.node().label());
    Tensor log_prob(scores.dtype(), scores.shape());
    visit_float(scores.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = scores.data<T>();
      T* out = log_prob.data<T>();
      parallel_for(g.n * g.d, std::max<int64_t>(1, 8192 / std::max<int64_t>(g.c, 1)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t offset = (r / g.d) * g.c * g.d + r % g.d;
          LogSoftmaxRow{}(in + offset, out + offset, g.c, g.d, static_cast<compute_t<T>*>(nullptr));
        }
      });
      negative_log_likelihood(log_prob.data<T>(), labels, weight ? weight->data<T>() : nullptr, g, attrs_, ctx);
    });
    if (ctx.output_requested(1)) ctx.set_output(1, std::move(log_prob));
  }

 private:
  LossAttributes attrs_;
};

}  // namespace

// The loss sums run in FP32 whatever the storage, as PyTorch's nll_loss and ONNX Runtime's CUDA kernels do.
MPA_OP_TRAITS("", "NegativeLogLikelihoodLoss", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "NegativeLogLikelihoodLoss", NegativeLogLikelihoodLossOp, 12, 13, 22);
MPA_OP_TRAITS("", "SoftmaxCrossEntropyLoss", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLossOp, 12, 13);

}  // namespace mpa
