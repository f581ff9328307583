// One row-major GEMM (batch) on cuBLAS with a node's operand format and compute type: MatMul and Gemm
// (ops/gemm.cu), and the recurrent ops' projections and steps (ops/lstm.cu).
#pragma once
#include <cstdint>
#include <vector>

#include "backends/cuda/math_modes.h"
#include "tensor/tensor.h"

namespace mpa::cuda {

// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] for b < batch, A[b] at a_offsets[b] elements (B, C
// likewise); C is float32 (float64 for float64 operands).
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  double alpha = 1, beta = 0;
  std::vector<int64_t> a_offsets = {0}, b_offsets = {0}, c_offsets = {0};
};

// Operands reach cuBLAS in math.operands (a scratch copy for 16-bit operands: exact, since the values are on
// the format's grid).
void run_gemm(const GemmCall& call, const GemmMath& math, const Tensor& a, const Tensor& b, Tensor& c);

}  // namespace mpa::cuda
