// MatMul's geometry, shared by the CPU and CUDA kernels: numpy semantics (batch dims broadcast, 1-D
// operands promoted and their dim removed); checks fail naming the node.
#pragma once
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mpa {

struct MatMulGeometry {
  int64_t M = 0, N = 0, K = 0;
  Shape a_batch, b_batch, out_batch, out_shape;
};
MatMulGeometry matmul_geometry(const std::string& label, const Tensor& a, const Tensor& b);
// The same for operands of these shapes (their element types checked by the caller).
MatMulGeometry matmul_geometry(const std::string& label, const Shape& a_shape, const Shape& b_shape);

// Per-batch element offsets of an operand whose batch dims broadcast to out_batch.
std::vector<int64_t> batch_offsets(const Shape& batch, const Shape& out_batch, int64_t matrix_size);

}  // namespace mpa
