// Comparisons with numpy broadcasting, producing bool: Equal Less LessOrEqual Greater GreaterOrEqual.
#include "kernels/binary.h"
#include "ops/elementwise.h"

namespace mpa {

using EqualOp = BinaryOp<EqualF, BinaryTraits{.types = TypeSet::All, .bool_out = true}>;
using LessOp = BinaryOp<LessF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;
using LessOrEqualOp = BinaryOp<LessOrEqualF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;
using GreaterOp = BinaryOp<GreaterF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;
using GreaterOrEqualOp = BinaryOp<GreaterOrEqualF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;

MPA_OP_TRAITS("", "Equal", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Equal", EqualOp, 1, 7, 11, 13, 19);
MPA_OP_TRAITS("", "Less", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Less", LessOp, 1, 7, 9, 13);
MPA_OP_TRAITS("", "LessOrEqual", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "LessOrEqual", LessOrEqualOp, 12, 16);
MPA_OP_TRAITS("", "Greater", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Greater", GreaterOp, 1, 7, 9, 13);
MPA_OP_TRAITS("", "GreaterOrEqual", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "GreaterOrEqual", GreaterOrEqualOp, 12, 16);

}  // namespace mpa
