// Logical and bitwise binary ops with numpy broadcasting: And Or Xor (bool), BitwiseAnd/Or/Xor
// (integers), BitShift (unsigned). Not and BitwiseNot are unary (unary_math.cpp).
#include "kernels/binary.h"
#include "ops/elementwise.h"

namespace mpa {

template <>
BitShiftF make_functor<BitShiftF>(const OpInit& init) {
  const std::string direction = init.get_string("direction", "");
  if (!(direction == "LEFT" || direction == "RIGHT"))
    fail(init.node().label() + ": direction must be 'LEFT' or 'RIGHT', got '" + direction + "'");
  return {direction == "LEFT"};
}

using AndOp = BinaryOp<AndF, BinaryTraits{.types = TypeSet::Bool}>;
using OrOp = BinaryOp<OrF, BinaryTraits{.types = TypeSet::Bool}>;
using XorOp = BinaryOp<XorF, BinaryTraits{.types = TypeSet::Bool}>;
using BitwiseAndOp = BinaryOp<BitwiseAndF, BinaryTraits{.types = TypeSet::Integer}>;
using BitwiseOrOp = BinaryOp<BitwiseOrF, BinaryTraits{.types = TypeSet::Integer}>;
using BitwiseXorOp = BinaryOp<BitwiseXorF, BinaryTraits{.types = TypeSet::Integer}>;
using BitShiftOp = BinaryOp<BitShiftF, BinaryTraits{.types = TypeSet::Unsigned}>;

MPA_OP_TRAITS("", "And", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "And", AndOp, 1, 7);
MPA_OP_TRAITS("", "Or", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Or", OrOp, 1, 7);
MPA_OP_TRAITS("", "Xor", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Xor", XorOp, 1, 7);
MPA_OP_TRAITS("", "BitwiseAnd", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "BitwiseAnd", BitwiseAndOp, 18);
MPA_OP_TRAITS("", "BitwiseOr", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "BitwiseOr", BitwiseOrOp, 18);
MPA_OP_TRAITS("", "BitwiseXor", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "BitwiseXor", BitwiseXorOp, 18);
MPA_OP_TRAITS("", "BitShift", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "BitShift", BitShiftOp, 11);

}  // namespace mpa
