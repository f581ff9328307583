// How the CUDA backend computes GEMMs and convolutions under a node's precision settings: the one table of
// library types, compute types and math modes (../shared/docs/backends.md §6; docs/numerics.md, "CUDA
// backend"). The emulator's choices are the model: operands in the format's own type, sums in FP32 unless
// the settings ask for fp16 accumulation, TF32 only for the TF32 target, and a plain-FP32 reference with
// no TF32 anywhere.
#pragma once
#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "ops/op.h"

namespace mpa::cuda {

struct GemmMath {
  cudaDataType operands = CUDA_R_32F;  // A and B
  cudaDataType output = CUDA_R_32F;    // C
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F_PEDANTIC;
  cublasMath_t math_mode = CUBLAS_PEDANTIC_MATH;
};

// The GEMM of a node storing its values as `config` says, on tensors of `dtype` (float32 or float64):
//   fp32 (reference, fp8, and any node kept in fp32): FP32 operands, CUBLAS_COMPUTE_32F_PEDANTIC (no TF32,
//     no reduced-precision reductions); fp8 values are exact in FP32, so an fp8 node's products are exact
//     and its sums FP32, as the emulator computes them;
//   tf32: FP32 operands, CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores read them rounded to TF32);
//   fp16 / bf16: CUDA_R_16F / CUDA_R_16BF operands, FP32 output, CUBLAS_COMPUTE_32F; with
//     --accumulate fp16, fp16 operands and output with CUBLAS_COMPUTE_16F;
//   float64 tensors: CUBLAS_COMPUTE_64F.
GemmMath gemm_math(const ExecConfig& config, DType dtype);

// Whether this backend runs a GEMM-based node under `config` at all ("" when it does): cuBLAS has no bf16
// accumulator.
std::string gemm_unsupported(const ExecConfig& config);

struct ConvMath {
  cudnnDataType_t data = CUDNN_DATA_FLOAT;     // x, w and y
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // the convolution descriptor's accumulation type
  cudnnMathType_t math = CUDNN_FMA_MATH;
};

// The convolution of a node under `config`, by the same rules: FP32 data with CUDNN_FMA_MATH (no TF32) for
// fp32 and fp8; CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION for tf32; HALF / BFLOAT16 data with FLOAT accumulation
// (cuDNN's "pseudo-half" configuration), HALF accumulation with --accumulate fp16; DOUBLE for float64.
ConvMath conv_math(const ExecConfig& config, DType dtype);

// "CUBLAS_COMPUTE_32F_PEDANTIC" etc., for reports and the selftest.
std::string gemm_math_name(const GemmMath& math);
std::string conv_math_name(const ConvMath& math);

}  // namespace mpa::cuda
