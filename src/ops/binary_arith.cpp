// Binary arithmetic with numpy broadcasting: Add Sub Mul Div Pow Mod. Each op is a functor from
// src/kernels/binary.h run by BinaryOp (src/ops/elementwise.h).
#include "kernels/binary.h"
#include "ops/elementwise.h"

namespace mpa {

template <>
ModF make_functor<ModF>(const OpInit& init) {
  return {init.get_int("fmod", 0) != 0};
}

using AddOp = BinaryOp<AddF, BinaryTraits{.types = TypeSet::Numeric}>;
using SubOp = BinaryOp<SubF, BinaryTraits{.types = TypeSet::Numeric}>;
using MulOp = BinaryOp<MulF, BinaryTraits{.types = TypeSet::Numeric}>;
using DivOp = BinaryOp<DivF, BinaryTraits{.types = TypeSet::Numeric, .nonzero_divisor = true}>;
using ModOp = BinaryOp<ModF, BinaryTraits{.types = TypeSet::Numeric, .nonzero_divisor = true}>;
// The exponent may have another numeric type than the base (opset 12+); the result has the base's.
using PowOp =
    BinaryOp<PowF, BinaryTraits{.types = TypeSet::Numeric, .same_types = false, .rhs_types = TypeSet::Numeric}>;

MPA_OP_TRAITS("", "Add", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Add", AddOp, 1, 6, 7, 13, 14);
MPA_OP_TRAITS("", "Sub", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Sub", SubOp, 1, 6, 7, 13, 14);
MPA_OP_TRAITS("", "Mul", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Mul", MulOp, 1, 6, 7, 13, 14);
MPA_OP_TRAITS("", "Div", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Div", DivOp, 1, 6, 7, 13, 14);
MPA_OP_TRAITS("", "Pow", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("", "Pow", PowOp, 1, 7, 12, 13, 15);
MPA_OP_TRAITS("", "Mod", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "Mod", ModOp, 10, 13);

}  // namespace mpa
