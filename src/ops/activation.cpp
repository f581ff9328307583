// Activation ops. Each op is a functor from src/kernels/unary.h (PRelu: binary.h) run by UnaryOp or
// BinaryOp (src/ops/elementwise.h); attributes are read once here, defaults are the ONNX ones.
#include "kernels/binary.h"
#include "kernels/unary.h"
#include "ops/elementwise.h"
#include "ops/gelu.h"

namespace mpa {

template <>
LeakyReluF make_functor<LeakyReluF>(const OpInit& init) {
  return {init.get_float("alpha", 0.01f)};
}
template <>
SwishF make_functor<SwishF>(const OpInit& init) {
  return {init.get_float("alpha", 1.0f)};
}
template <>
EluF make_functor<EluF>(const OpInit& init) {
  return {init.get_float("alpha", 1.0f)};
}
template <>
SeluF make_functor<SeluF>(const OpInit& init) {
  const SeluF defaults;
  return {init.get_float("alpha", defaults.alpha), init.get_float("gamma", defaults.gamma)};
}
template <>
CeluF make_functor<CeluF>(const OpInit& init) {
  const float alpha = init.get_float("alpha", 1.0f);
  if (!(alpha != 0.0f)) fail(init.node().label() + ": alpha must not be 0");
  return {alpha};
}
template <>
ThresholdedReluF make_functor<ThresholdedReluF>(const OpInit& init) {
  return {init.get_float("alpha", 1.0f)};
}
template <>
HardSigmoidF make_functor<HardSigmoidF>(const OpInit& init) {
  return {init.get_float("alpha", 0.2f), init.get_float("beta", 0.5f)};
}
template <>
ShrinkF make_functor<ShrinkF>(const OpInit& init) {
  return {init.get_float("lambd", 0.5f), init.get_float("bias", 0.0f)};
}
template <>
GeluF make_functor<GeluF>(const OpInit& init) {
  const std::string approximate = init.get_string("approximate", "none");
  if (!(approximate == "none" || approximate == "tanh"))
    fail(init.node().label() + ": approximate must be 'none' or 'tanh', got '" + approximate + "'");
  return {approximate == "tanh"};
}

// Gelu: the shared functor, or the ORT rule of ops/gelu.h.
class GeluOp : public OpKernel {
 public:
  explicit GeluOp(const OpInit& init)
      : generic_(init), tanh_approximation_(make_functor<GeluF>(init).tanh_approximation) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (!tanh_approximation_ || !ort_cuda_fp16_rules(ctx.config(), x.dtype())) return generic_.compute(ctx);
    visit_types<TypeSet::Float>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<compute_t<T>, float>) {
        Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
        cpu::map_unary(x.data<T>(), y.data<T>(), x.numel(), Stored<T, OrtCudaHalfTanhGeluF>{});
      }
    });
  }

 private:
  UnaryOp<GeluF, TypeSet::Float> generic_;
  bool tanh_approximation_;
};

using ReluOp = UnaryOp<ReluF, TypeSet::Signed>;
using LeakyReluOp = UnaryOp<LeakyReluF, TypeSet::Float>;
using EluOp = UnaryOp<EluF, TypeSet::Float>;
using SeluOp = UnaryOp<SeluF, TypeSet::Float>;
using CeluOp = UnaryOp<CeluF, TypeSet::Float>;
using SigmoidOp = UnaryOp<SigmoidF, TypeSet::Float>;
using SwishOp = UnaryOp<SwishF, TypeSet::Float>;
using HardSigmoidOp = UnaryOp<HardSigmoidF, TypeSet::Float>;
using HardSwishOp = UnaryOp<HardSwishF, TypeSet::Float>;
using TanhOp = UnaryOp<TanhF, TypeSet::Float>;
using SoftplusOp = UnaryOp<SoftplusF, TypeSet::Float>;
using SoftsignOp = UnaryOp<SoftsignF, TypeSet::Float>;
using MishOp = UnaryOp<MishF, TypeSet::Float>;
using ThresholdedReluOp = UnaryOp<ThresholdedReluF, TypeSet::Float>;
using ShrinkOp = UnaryOp<ShrinkF, TypeSet::Numeric>;
using PReluOp = BinaryOp<PReluF, BinaryTraits{.types = TypeSet::Numeric}>;

MPA_OP_TRAITS("", "Relu", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Relu", ReluOp, 1, 6, 13, 14);
MPA_OP_TRAITS("", "LeakyRelu", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "LeakyRelu", LeakyReluOp, 1, 6, 16);
MPA_OP_TRAITS("", "Elu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Elu", EluOp, 1, 6, 22);
MPA_OP_TRAITS("", "Selu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Selu", SeluOp, 1, 6, 22);
MPA_OP_TRAITS("", "Celu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Celu", CeluOp, 12);
MPA_OP_TRAITS("", "Sigmoid", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Sigmoid", SigmoidOp, 1, 6, 13);
MPA_OP_TRAITS("", "Swish", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Swish", SwishOp, 24);
MPA_OP_TRAITS("", "HardSigmoid", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "HardSigmoid", HardSigmoidOp, 1, 6, 22);
MPA_OP_TRAITS("", "HardSwish", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "HardSwish", HardSwishOp, 14, 22);
MPA_OP_TRAITS("", "Tanh", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Tanh", TanhOp, 1, 6, 13);
MPA_OP_TRAITS("", "Softplus", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Softplus", SoftplusOp, 1, 22);
MPA_OP_TRAITS("", "Softsign", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Softsign", SoftsignOp, 1, 22);
MPA_OP_TRAITS("", "Gelu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Gelu", GeluOp, 20);
MPA_OP_TRAITS("", "Mish", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Mish", MishOp, 18, 22);
MPA_OP_TRAITS("", "ThresholdedRelu", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "ThresholdedRelu", ThresholdedReluOp, 10, 22);
MPA_OP_TRAITS("", "Shrink", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Shrink", ShrinkOp, 9);
MPA_OP_TRAITS("", "PRelu", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "PRelu", PReluOp, 1, 6, 7, 9, 16);

}  // namespace mpa
