// Binary arithmetic with numpy broadcasting on CUDA: the CPU's functors (src/kernels/binary.h) under the
// same traits and since-versions as their CPU registrations (ops/binary_arith.cpp, ops/activation.cpp,
// ops/compare.cpp, ops/logical.cpp).
#include "backends/cuda/ops/elementwise.cuh"
#include "kernels/binary.h"

namespace mpa {

template <>
ModF make_functor<ModF>(const OpInit& init);  // defined beside the CPU's Mod (ops/binary_arith.cpp)

namespace cuda {

using AddOp = BinaryOp<AddF, BinaryTraits{.types = TypeSet::Numeric}>;
using SubOp = BinaryOp<SubF, BinaryTraits{.types = TypeSet::Numeric}>;
using MulOp = BinaryOp<MulF, BinaryTraits{.types = TypeSet::Numeric}>;
using DivOp = BinaryOp<DivF, BinaryTraits{.types = TypeSet::Numeric, .nonzero_divisor = true}>;
using ModOp = BinaryOp<ModF, BinaryTraits{.types = TypeSet::Numeric, .nonzero_divisor = true}>;
using PowOp =
    BinaryOp<PowF, BinaryTraits{.types = TypeSet::Numeric, .same_types = false, .rhs_types = TypeSet::Numeric}>;
using PReluOp = BinaryOp<PReluF, BinaryTraits{.types = TypeSet::Numeric}>;
// Equal's string inputs (opset 19) never reach the device: a string tensor is not uploaded.
using EqualOp = BinaryOp<EqualF, BinaryTraits{.types = TypeSet::All, .bool_out = true}>;
using LessOp = BinaryOp<LessF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;
using LessOrEqualOp = BinaryOp<LessOrEqualF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;
using GreaterOp = BinaryOp<GreaterF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;
using GreaterOrEqualOp = BinaryOp<GreaterOrEqualF, BinaryTraits{.types = TypeSet::Numeric, .bool_out = true}>;
using AndOp = BinaryOp<AndF, BinaryTraits{.types = TypeSet::Bool}>;
using OrOp = BinaryOp<OrF, BinaryTraits{.types = TypeSet::Bool}>;

MPA_REGISTER_KERNEL("cuda", "", "Add", AddOp, 1, 6, 7, 13, 14);
MPA_REGISTER_KERNEL("cuda", "", "Sub", SubOp, 1, 6, 7, 13, 14);
MPA_REGISTER_KERNEL("cuda", "", "Mul", MulOp, 1, 6, 7, 13, 14);
MPA_REGISTER_KERNEL("cuda", "", "Div", DivOp, 1, 6, 7, 13, 14);
MPA_REGISTER_KERNEL("cuda", "", "Mod", ModOp, 10, 13);
MPA_REGISTER_KERNEL("cuda", "", "Pow", PowOp, 1, 7, 12, 13, 15);
MPA_REGISTER_KERNEL("cuda", "", "PRelu", PReluOp, 1, 6, 7, 9, 16);
MPA_REGISTER_KERNEL("cuda", "", "Equal", EqualOp, 1, 7, 11, 13, 19);
MPA_REGISTER_KERNEL("cuda", "", "Less", LessOp, 1, 7, 9, 13);
MPA_REGISTER_KERNEL("cuda", "", "LessOrEqual", LessOrEqualOp, 12, 16);
MPA_REGISTER_KERNEL("cuda", "", "Greater", GreaterOp, 1, 7, 9, 13);
MPA_REGISTER_KERNEL("cuda", "", "GreaterOrEqual", GreaterOrEqualOp, 12, 16);
MPA_REGISTER_KERNEL("cuda", "", "And", AndOp, 1, 7);
MPA_REGISTER_KERNEL("cuda", "", "Or", OrOp, 1, 7);

}  // namespace cuda
}  // namespace mpa
