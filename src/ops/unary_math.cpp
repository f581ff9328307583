// Unary math ops: arithmetic, rounding, trigonometric/hyperbolic, predicates, logical/bitwise not.
// Each op is a functor from src/kernels/ run by UnaryOp (src/ops/elementwise.h).
#include "kernels/binary.h"
#include "kernels/unary.h"
#include "ops/elementwise.h"

namespace mpa {

template <>
IsInfF make_functor<IsInfF>(const OpInit& init) {
  return IsInfF{init.get_int("detect_negative", 1) != 0, init.get_int("detect_positive", 1) != 0};
}

using SqrtOp = UnaryOp<SqrtF, TypeSet::Float>;
using ExpOp = UnaryOp<ExpF, TypeSet::Float>;
using LogOp = UnaryOp<LogF, TypeSet::Float>;
using ReciprocalOp = UnaryOp<ReciprocalF, TypeSet::Float>;
using FloorOp = UnaryOp<FloorF, TypeSet::Float>;
using CeilOp = UnaryOp<CeilF, TypeSet::Float>;
using RoundOp = UnaryOp<RoundF, TypeSet::Float>;
using ErfOp = UnaryOp<ErfF, TypeSet::Float>;
using AbsOp = UnaryOp<AbsF, TypeSet::Numeric>;
using NegOp = UnaryOp<NegF, TypeSet::Signed>;
using SignOp = UnaryOp<SignF, TypeSet::Numeric>;
using SinOp = UnaryOp<SinF, TypeSet::Float>;
using CosOp = UnaryOp<CosF, TypeSet::Float>;
using TanOp = UnaryOp<TanF, TypeSet::Float>;
using AsinOp = UnaryOp<AsinF, TypeSet::Float>;
using AcosOp = UnaryOp<AcosF, TypeSet::Float>;
using AtanOp = UnaryOp<AtanF, TypeSet::Float>;
using SinhOp = UnaryOp<SinhF, TypeSet::Float>;
using CoshOp = UnaryOp<CoshF, TypeSet::Float>;
using AsinhOp = UnaryOp<AsinhF, TypeSet::Float>;
using AcoshOp = UnaryOp<AcoshF, TypeSet::Float>;
using AtanhOp = UnaryOp<AtanhF, TypeSet::Float>;
using IsNaNOp = UnaryOp<IsNaNF, TypeSet::Float, true>;
using IsInfOp = UnaryOp<IsInfF, TypeSet::Float, true>;
using NotOp = UnaryOp<NotF, TypeSet::Bool>;
using BitwiseNotOp = UnaryOp<BitwiseNotF, TypeSet::Integer>;

MPA_OP_TRAITS("", "Sqrt", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Sqrt", SqrtOp, 1, 6, 13);
MPA_OP_TRAITS("", "Exp", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Exp", ExpOp, 1, 6, 13);
MPA_OP_TRAITS("", "Log", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Log", LogOp, 1, 6, 13);
MPA_OP_TRAITS("", "Reciprocal", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Reciprocal", ReciprocalOp, 1, 6, 13);
MPA_OP_TRAITS("", "Floor", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Floor", FloorOp, 1, 6, 13);
MPA_OP_TRAITS("", "Ceil", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Ceil", CeilOp, 1, 6, 13);
MPA_OP_TRAITS("", "Round", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Round", RoundOp, 11, 22);
MPA_OP_TRAITS("", "Erf", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Erf", ErfOp, 9, 13);
MPA_OP_TRAITS("", "Abs", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Abs", AbsOp, 1, 6, 13);
MPA_OP_TRAITS("", "Neg", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Neg", NegOp, 1, 6, 13);
MPA_OP_TRAITS("", "Sign", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Sign", SignOp, 9, 13);
MPA_OP_TRAITS("", "Sin", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Sin", SinOp, 7, 22);
MPA_OP_TRAITS("", "Cos", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Cos", CosOp, 7, 22);
MPA_OP_TRAITS("", "Tan", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Tan", TanOp, 7, 22);
MPA_OP_TRAITS("", "Asin", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Asin", AsinOp, 7, 22);
MPA_OP_TRAITS("", "Acos", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Acos", AcosOp, 7, 22);
MPA_OP_TRAITS("", "Atan", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Atan", AtanOp, 7, 22);
MPA_OP_TRAITS("", "Sinh", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Sinh", SinhOp, 9, 22);
MPA_OP_TRAITS("", "Cosh", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Cosh", CoshOp, 9, 22);
MPA_OP_TRAITS("", "Asinh", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Asinh", AsinhOp, 9, 22);
MPA_OP_TRAITS("", "Acosh", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Acosh", AcoshOp, 9, 22);
MPA_OP_TRAITS("", "Atanh", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Atanh", AtanhOp, 9, 22);
MPA_OP_TRAITS("", "IsNaN", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "IsNaN", IsNaNOp, 9, 13, 20);
MPA_OP_TRAITS("", "IsInf", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "IsInf", IsInfOp, 10, 20);
MPA_OP_TRAITS("", "Not", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Not", NotOp, 1);
MPA_OP_TRAITS("", "BitwiseNot", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "BitwiseNot", BitwiseNotOp, 18);

}  // namespace mpa
