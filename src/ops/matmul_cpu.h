// MatMul's CPU loop, shared by MatMul and com.microsoft FusedMatMul: every batch of a MatMulGeometry as one
// GEMM (the batch folded into M when B has no batch) or a batched GEMM, on contiguous accumulation-type
// operands.
#pragma once
#include <vector>

#include "backends/cpu/gemm.h"
#include "ops/matmul.h"

namespace mpa {

// Y = alpha * op(A) op(B) for every batch of g, op transposing the last two dims of an operand whose flag
// is set (g describes the operands as op() leaves them).
template <class Acc>
void matmul_acc(const MatMulGeometry& g, bool trans_a, bool trans_b, Acc alpha, const Acc* a, const Acc* b, Acc* y,
                const cpu::GemmMath& math) {
  const int64_t M = g.M, N = g.N, K = g.K;
  const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  const int64_t batch = shape_numel(g.out_batch);
  if (!trans_a && shape_numel(g.b_batch) == 1 && shape_numel(g.a_batch) == batch) {
    cpu::gemm(false, trans_b, batch * M, N, K, alpha, a, lda, b, ldb, Acc(0), y, N, math);  // batch folds into M
    return;
  }
  const auto ao = batch_offsets(g.a_batch, g.out_batch, M * K), bo = batch_offsets(g.b_batch, g.out_batch, K * N);
  std::vector<int64_t> co(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) co[static_cast<size_t>(i)] = i * M * N;
  cpu::gemm_batched<Acc>(trans_a, trans_b, M, N, K, alpha, a, lda, ao.data(), b, ldb, bo.data(), Acc(0), y, N,
                         co.data(), batch, math);
}

}  // namespace mpa
