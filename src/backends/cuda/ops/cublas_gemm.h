// Runs a GemmCall on cuBLAS with a node's operand format and compute type: MatMul and Gemm (ops/gemm.cu),
// ConvTranspose's columns and the recurrent ops' projections and steps.
#pragma once
#include "backends/cuda/math_modes.h"
#include "backends/cuda/ops/gemm_call.h"
#include "tensor/tensor.h"

namespace mpa::cuda {

// C is float32 (float64 for float64 operands). Operands reach cuBLAS in math.operands (a scratch copy for
// 16-bit operands: exact, since the values are on the format's grid).
void run_gemm(const GemmCall& call, const GemmMath& math, const Tensor& a, const Tensor& b, Tensor& c);

}  // namespace mpa::cuda
