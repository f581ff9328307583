// Unary elementwise ops and activations on CUDA: the CPU's functors (src/kernels/unary.h) under the same
// type sets and since-versions as their CPU registrations (ops/unary_math.cpp, ops/activation.cpp).
#include "backends/cuda/ops/elementwise.cuh"
#include "kernels/binary.h"
#include "kernels/unary.h"

namespace mpa {

// Attribute readers, defined beside the CPU registrations (ops/activation.cpp, ops/unary_math.cpp).
template <>
LeakyReluF make_functor<LeakyReluF>(const OpInit& init);
template <>
SwishF make_functor<SwishF>(const OpInit& init);
template <>
EluF make_functor<EluF>(const OpInit& init);
template <>
SeluF make_functor<SeluF>(const OpInit& init);
template <>
CeluF make_functor<CeluF>(const OpInit& init);
template <>
ThresholdedReluF make_functor<ThresholdedReluF>(const OpInit& init);
template <>
HardSigmoidF make_functor<HardSigmoidF>(const OpInit& init);
template <>
ShrinkF make_functor<ShrinkF>(const OpInit& init);
template <>
GeluF make_functor<GeluF>(const OpInit& init);
template <>
IsInfF make_functor<IsInfF>(const OpInit& init);

namespace cuda {

template <class F>
using FloatOp = UnaryOp<F, TypeSet::Float>;
using ReluOp = UnaryOp<ReluF, TypeSet::Signed>;
using NegOp = UnaryOp<NegF, TypeSet::Signed>;
using AbsOp = UnaryOp<AbsF, TypeSet::Numeric>;
using SignOp = UnaryOp<SignF, TypeSet::Numeric>;
using IsNaNOp = UnaryOp<IsNaNF, TypeSet::Float, true>;
using IsInfOp = UnaryOp<IsInfF, TypeSet::Float, true>;
using NotOp = UnaryOp<NotF, TypeSet::Bool>;

MPA_REGISTER_KERNEL("cuda", "", "Sqrt", FloatOp<SqrtF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Exp", FloatOp<ExpF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Log", FloatOp<LogF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Reciprocal", FloatOp<ReciprocalF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Floor", FloatOp<FloorF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Ceil", FloatOp<CeilF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Round", FloatOp<RoundF>, 11, 22);
MPA_REGISTER_KERNEL("cuda", "", "Erf", FloatOp<ErfF>, 9, 13);
MPA_REGISTER_KERNEL("cuda", "", "Sin", FloatOp<SinF>, 7, 22);
MPA_REGISTER_KERNEL("cuda", "", "Cos", FloatOp<CosF>, 7, 22);
MPA_REGISTER_KERNEL("cuda", "", "Tanh", FloatOp<TanhF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Sigmoid", FloatOp<SigmoidF>, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Swish", FloatOp<SwishF>, 24);
MPA_REGISTER_KERNEL("cuda", "", "LeakyRelu", FloatOp<LeakyReluF>, 1, 6, 16);
MPA_REGISTER_KERNEL("cuda", "", "Elu", FloatOp<EluF>, 1, 6, 22);
MPA_REGISTER_KERNEL("cuda", "", "Selu", FloatOp<SeluF>, 1, 6, 22);
MPA_REGISTER_KERNEL("cuda", "", "Celu", FloatOp<CeluF>, 12);
MPA_REGISTER_KERNEL("cuda", "", "HardSigmoid", FloatOp<HardSigmoidF>, 1, 6, 22);
MPA_REGISTER_KERNEL("cuda", "", "HardSwish", FloatOp<HardSwishF>, 14, 22);
MPA_REGISTER_KERNEL("cuda", "", "Softplus", FloatOp<SoftplusF>, 1, 22);
MPA_REGISTER_KERNEL("cuda", "", "Softsign", FloatOp<SoftsignF>, 1, 22);
MPA_REGISTER_KERNEL("cuda", "", "Gelu", FloatOp<GeluF>, 20);
MPA_REGISTER_KERNEL("cuda", "", "Mish", FloatOp<MishF>, 18, 22);
MPA_REGISTER_KERNEL("cuda", "", "ThresholdedRelu", FloatOp<ThresholdedReluF>, 10, 22);
MPA_REGISTER_KERNEL("cuda", "", "Relu", ReluOp, 1, 6, 13, 14);
MPA_REGISTER_KERNEL("cuda", "", "Neg", NegOp, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Abs", AbsOp, 1, 6, 13);
MPA_REGISTER_KERNEL("cuda", "", "Sign", SignOp, 9, 13);
MPA_REGISTER_KERNEL("cuda", "", "IsNaN", IsNaNOp, 9, 13, 20);
MPA_REGISTER_KERNEL("cuda", "", "IsInf", IsInfOp, 10, 20);
MPA_REGISTER_KERNEL("cuda", "", "Not", NotOp, 1);

}  // namespace cuda
}  // namespace mpa
