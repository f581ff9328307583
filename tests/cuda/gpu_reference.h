// What an NVIDIA GPU computes, for the CUDA numerics tests to hold mpaudit's CPU emulation against: the
// device's own conversion instructions, fp16 arithmetic, the shared kernel functors compiled for the
// device, and cuBLAS GEMMs. Plain C++ interface (no CUDA types) so the tests are ordinary host code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/formats.h"

namespace mpa::gpu {

// The device's name and compute capability, or empty when no CUDA device can be used (the tests skip).
std::string device_description();

// Every float whose bit pattern lies in [first_bits, first_bits + count), stored in `format` and loaded
// back on the device. `native`: CUDA's own conversions (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h with
// __NV_SATFINITE, which on sm_89+ are the cvt instructions); otherwise mpa::round_to_format compiled
// for the device (the shared source the CUDA backend runs). Formats: FP16, BF16, FP8E4M3FN, FP8E5M2.
std::vector<float> round_bit_range(Format format, uint32_t first_bits, uint32_t count, bool native);

// Every fp8 code decoded by the device's instructions (cuda_fp8.h's __nv_cvt_fp8_to_halfraw).
std::vector<float> decode_all_fp8(Format format);

enum class HalfOp { Add, Mul, Div };
// a ⊙ b in fp16 arithmetic (__hadd, __hmul, __hdiv) for every b code (65536), for each a code in
// [first_a, first_a + count_a); result index (a - first_a) * 65536 + b, as fp16 codes.
std::vector<uint16_t> half_binary(HalfOp op, uint32_t first_a, uint32_t count_a);

// Shared unary functor `name` (ExpF, TanhF, ... from kernels/unary.h) applied on the device to every fp16
// code's value, in float math, rounded to fp16 by the shared round_to_format: the CUDA backend's Stored<>
// path. Result per code, as floats. Unknown names return an empty vector.
std::vector<float> unary_on_all_halves(const std::string& name);
std::vector<std::string> unary_functor_names();

// C = A·B through cublasGemmEx, A row-major M×K, B row-major K×N (values already on the operand format's
// grid), C row-major M×N returned as floats.
enum class GemmKind {
  Fp16Accumulate32,  // fp16 in/out, CUBLAS_COMPUTE_32F (ORT's and PyTorch's default)
  Fp16Accumulate16,  // fp16 in/out, CUBLAS_COMPUTE_16F
  Bf16Accumulate32,  // bf16 in/out, CUBLAS_COMPUTE_32F
  Tf32,              // fp32 in/out, CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores on fp32 operands)
};
std::vector<float> gemm(GemmKind kind, int M, int N, int K, const std::vector<float>& a, const std::vector<float>& b);

}  // namespace mpa::gpu
