// Where's checks and output shape, shared by the CPU and CUDA kernels: a bool condition, X and Y of one
// element type, numpy broadcasting over all three; failures name the node.
#pragma once
#include "ops/elementwise.h"

namespace mpa {

inline Shape where_output_shape(const KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  if (!(c.dtype() == DType::Bool)) fail(node.label() + ": condition must be bool, got " + dtype_name(c.dtype()));
  if (!(x.dtype() == y.dtype()))
    fail(node.label() + ": X and Y have different element types " + dtype_name(x.dtype()) + " and " +
         dtype_name(y.dtype()));
  return broadcast_output_shape(node, {c.shape(), x.shape(), y.shape()});
}

}  // namespace mpa
