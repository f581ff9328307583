// The CPU backend's GEMM seam. Row-major, BLAS conventions:
//   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C
// with op(X) = X or X^T, and lda/ldb/ldc the row strides of A, B, C as stored. The element type is the
// accumulation type: "GEMM on float inputs with float accumulation" is gemm(float...), FP64 references use
// gemm(double...). 16-bit-float callers convert their inputs to float first (exact). How a GPU computes a
// low-precision GEMM (TF32 operands, fp16 accumulation) is a GemmMath passed to the float gemm: the one
// place that emulation lives. Integer types use a plain loop.
// Threading: the BLAS itself is single-threaded; gemm() splits C into blocks over the OpenMP threads.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>

#include "tensor/formats.h"

namespace mpa::cpu {

// The arithmetic of a float GEMM (docs/numerics.md, "Op math per class"). The default is a plain sgemm:
// fp32 accumulation of the float operands as given (cuBLAS CUBLAS_COMPUTE_32F; operands already on the
// fp16/bf16 grid give exact products, so only the summation order differs from the GPU).
struct GemmMath {
  // FP16 or BF16: CUBLAS_COMPUTE_16F, emulated pessimistically by summing K in chunks of
  // kHalfAccumulationChunk with an fp32 sgemm and rounding every chunk's partial sum and the running sum
  // onto this grid. FP32: the accumulator is fp32.
  Format accumulator = Format::FP32;
  // Round A and B to TF32 (RNE, as cuBLAS converts FP32 operands for tensor cores) before an fp32 sgemm.
  bool tf32_operands = false;

  bool plain() const { return accumulator == Format::FP32 && !tf32_operands; }
};

// K per partial sum under fp16 accumulation: one mma.sync.m16n8k16 tensor-core instruction sums 16
// products into its fp16 accumulator before the accumulator is rounded, so 16 is the hardware's own
// rounding granularity; rounding the chunk's partial sum before adding it (two roundings per chunk where
// the hardware has one) makes the model pessimistic.
inline constexpr int64_t kHalfAccumulationChunk = 16;

// OpenBLAS picks its kernels once, when it loads, by CPU model number. On CPUs whose model it does not know
// (virtual machines that mask it, newer parts) it settles for generic SSE3 kernels ("Prescott"), 2-3x
// slower than the AVX2/AVX-512 ones the CPU can run; and it runs AMD Zen 4/5 on its AVX2 (Haswell) kernels,
// though they execute AVX-512 (Zen 5 at full width: ResNet-50 1.4-1.8x faster on the SkylakeX kernels).
// Returns the OPENBLAS_CORETYPE to restart with when that happened and the user has not chosen one, judged
// from the CPU's feature flags; nullopt otherwise.
std::optional<std::string> blas_kernels_to_force();

// oneDNN generates its sgemm kernels on its first call (28 ms on this project's machines, a quarter of a
// one-sample LSTM audit): a command about to load a model holds one of these while it loads, so that the
// generation runs meanwhile on another thread. Its destructor waits for that thread, and must run before
// static destructors do (the thread uses oneDNN's statics): hold it in main's scope. Does nothing where the
// build has no oneDNN.
class GemmWarmUp {
 public:
  GemmWarmUp();
  ~GemmWarmUp();
  GemmWarmUp(const GemmWarmUp&) = delete;
  GemmWarmUp& operator=(const GemmWarmUp&) = delete;

 private:
  std::thread thread_;
};

// Called after each block of C that gemm() computes, rows [m_begin, m_end) x columns [n_begin, n_end), on the
// thread that computed it: a caller finishes the block there while it is in cache (ops/conv.cpp's epilogues).
// The blocks depend on the shape only, as the results do.
using GemmBlockDone = std::function<void(int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end)>;

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmMath& math = {},
          const GemmBlockDone& done = {});
// The FP64 reference and integer GEMMs take a GemmMath only so that every caller has one signature: they
// ignore it (a reference is never emulated; integer arithmetic is exact or wraps).
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc, const GemmMath& math = {},
          const GemmBlockDone& done = {});

// Integer GEMM (wrap-around arithmetic, as numpy does for fixed-width ints).
template <class T>
  requires std::is_integral_v<T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc, const GemmMath& math = {}) {
  for (int64_t m = 0; m < M; ++m) {
    T* c = C + m * ldc;
    for (int64_t n = 0; n < N; ++n) c[n] = beta == T(0) ? T(0) : static_cast<T>(beta * c[n]);
    for (int64_t k = 0; k < K; ++k) {
      const T a = static_cast<T>(alpha * (trans_a ? A[k * lda + m] : A[m * lda + k]));
      if (a == T(0)) continue;
      if (!trans_b) {
        const T* b = B + k * ldb;
        for (int64_t n = 0; n < N; ++n) c[n] = static_cast<T>(c[n] + a * b[n]);
      } else {
        for (int64_t n = 0; n < N; ++n) c[n] = static_cast<T>(c[n] + a * B[n * ldb + k]);
      }
    }
  }
}

// A batch of independent GEMMs of one geometry; matrix i starts at A + a_offsets[i] etc. `math` applies to
// float batches (double and integer GEMMs are exact references or exact arithmetic).
// Batches of at least one GEMM per thread (attention-shaped MatMuls), or of small GEMMs, run in parallel
// over the batch, one GEMM per thread; a few large GEMMs run one after another, each split over the threads.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                  const int64_t* a_offsets, const T* B, int64_t ldb, const int64_t* b_offsets, T beta, T* C,
                  int64_t ldc, const int64_t* c_offsets, int64_t batch, const GemmMath& math = {});


}  // namespace mpa::cpu
