#include "backends/cpu/gemm.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "backends/cpu/parallel.h"
#include "common/error.h"

namespace mpa::cpu {

namespace {

// BLAS dimensions are int; larger matrices are user data we cannot take, not a crash.
int blas_int(int64_t v) {
  require(v >= 0 && v <= INT32_MAX, "GEMM dimension " + std::to_string(v) + " exceeds the BLAS limit");
  return static_cast<int>(v);
}

// Below this many multiply-adds a GEMM runs on one thread; batches of GEMMs below it run in parallel over
// the batch instead.
constexpr double kParallelGemmWork = 256.0 * 1024;

bool inside_parallel_region() {
#ifdef _OPENMP
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

// The BLAS runs single-threaded (parallel.cpp): one pool (OpenMP) owns the cores, and a large GEMM is split
// here into column (or row) blocks of C, one BLAS call per thread. Two pools spinning on the same cores
// (OpenMP after im2col, OpenBLAS's workers in the GEMM) measured 2x slower end to end on 2 cores.
template <class T, class Blas>
void split_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                int64_t ldb, T* C, int64_t ldc, Blas&& blas) {
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const int threads = num_threads();
  if (threads <= 1 || work < kParallelGemmWork || inside_parallel_region() || std::max(M, N) < 32) {
    blas(M, N, A, B, C);
    return;
  }
  const bool split_n = N >= M || M < 8 * threads;
  const int64_t extent = split_n ? N : M, align = split_n ? 16 : 8;
  // Several blocks per thread, handed out dynamically: on a busy machine a descheduled thread then holds
  // up one small block instead of half the GEMM.
  const int64_t blocks = std::min<int64_t>(4 * threads, std::max<int64_t>(1, extent / (4 * align)));
  // Block boundaries on multiples of `align` keep the BLAS kernels on full panels.
  auto boundary = [&](int64_t b) {
    return b >= blocks ? extent : std::min(extent, (extent * b / blocks + align - 1) / align * align);
  };
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = boundary(b), hi = boundary(b + 1);
    if (hi <= lo) continue;
    if (split_n)
      blas(M, hi - lo, A, B + (trans_b ? lo * ldb : lo), C + lo);
    else
      blas(hi - lo, N, A + (trans_a ? lo : lo * lda), B, C + lo * ldc);
  }
}

// OpenBLAS starts with one thread per core; make it single-threaded before any GEMM (see split_gemm).
const bool g_blas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

template <class T> void scale_only(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = beta == T(0) ? T(0) : beta * C[m * ldc + n];
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_only(M, N, beta, C, ldc);  // the BLAS would skip beta * C
  const int k = blas_int(K), ia = blas_int(lda), ib = blas_int(ldb), ic = blas_int(ldc);
  split_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc,
             [&](int64_t m, int64_t n, const float* a, const float* b, float* c) {
               cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                           blas_int(m), blas_int(n), k, alpha, a, ia, b, ib, beta, c, ic);
             });
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_only(M, N, beta, C, ldc);
  const int k = blas_int(K), ia = blas_int(lda), ib = blas_int(ldb), ic = blas_int(ldc);
  split_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc,
             [&](int64_t m, int64_t n, const double* a, const double* b, double* c) {
               cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                           blas_int(m), blas_int(n), k, alpha, a, ia, b, ib, beta, c, ic);
             });
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                  const int64_t* a_offsets, const T* B, int64_t ldb, const int64_t* b_offsets, T beta, T* C,
                  int64_t ldc, const int64_t* c_offsets, int64_t batch) {
  auto one = [&](int64_t i) {
    gemm(trans_a, trans_b, M, N, K, alpha, A + a_offsets[i], lda, B + b_offsets[i], ldb, beta, C + c_offsets[i], ldc);
  };
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const bool over_batch = batch >= num_threads() || work < kParallelGemmWork || !std::is_floating_point_v<T>;
  if (batch > 1 && over_batch) {
    // One parallel region over the batch (inside it each GEMM stays on its thread): attention-shaped
    // batches then cost one fork/join instead of one per GEMM, which matters on a busy machine.
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
}

#define MPA_GEMM_BATCHED(T)                                                                                    \
  template void gemm_batched<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const int64_t*, \
                                const T*, int64_t, const int64_t*, T, T*, int64_t, const int64_t*, int64_t);
MPA_GEMM_BATCHED(float)
MPA_GEMM_BATCHED(double)
MPA_GEMM_BATCHED(int32_t)
MPA_GEMM_BATCHED(int64_t)
MPA_GEMM_BATCHED(uint32_t)
MPA_GEMM_BATCHED(uint64_t)
#undef MPA_GEMM_BATCHED

}  // namespace mpa::cpu
