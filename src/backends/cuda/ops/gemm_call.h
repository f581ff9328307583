// One row-major GEMM (batch), as the CUDA kernels describe it to cuBLAS (ops/cublas_gemm.h runs it): plain
// data, so that the host's tests can run the same description through the CPU's GEMM.
#pragma once
#include <cstdint>
#include <vector>

namespace mpa::cuda {

// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] for b < batch, A[b] at a_offsets[b] elements (B, C
// likewise).
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  double alpha = 1, beta = 0;
  std::vector<int64_t> a_offsets = {0}, b_offsets = {0}, c_offsets = {0};
};

}  // namespace mpa::cuda
