#include "backends/cpu/gemm.h"

#include <cblas.h>

#include <mutex>

#include "backends/cpu/parallel.h"
#include "common/error.h"

namespace mpa::cpu {

namespace {

// BLAS dimensions are int; larger matrices are user data we cannot take, not a crash.
int blas_int(int64_t v) {
  require(v >= 0 && v <= INT32_MAX, "GEMM dimension " + std::to_string(v) + " exceeds the BLAS limit");
  return static_cast<int>(v);
}

// Below this many multiply-adds per GEMM, a batch is better spread over threads than each GEMM.
constexpr double kSmallGemmWork = 4.0 * 1024 * 1024;

std::mutex g_blas_threads_mutex;
int g_single_threaded_depth = 0;

}  // namespace

SingleThreadedBlas::SingleThreadedBlas() : active_(num_threads() > 1) {
  if (!active_) return;
  std::lock_guard lock(g_blas_threads_mutex);
  if (g_single_threaded_depth++ == 0) openblas_set_num_threads(1);
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (!active_) return;
  std::lock_guard lock(g_blas_threads_mutex);
  if (--g_single_threaded_depth == 0) openblas_set_num_threads(num_threads());
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // BLAS leaves C untouched for K == 0 only when beta == 1
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = beta == 0.f ? 0.f : beta * C[m * ldc + n];
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_int(M),
              blas_int(N), blas_int(K), alpha, A, blas_int(lda), B, blas_int(ldb), beta, C, blas_int(ldc));
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = beta == 0.0 ? 0.0 : beta * C[m * ldc + n];
    return;
  }
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_int(M),
              blas_int(N), blas_int(K), alpha, A, blas_int(lda), B, blas_int(ldb), beta, C, blas_int(ldc));
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                  const int64_t* a_offsets, const T* B, int64_t ldb, const int64_t* b_offsets, T beta, T* C,
                  int64_t ldc, const int64_t* c_offsets, int64_t batch) {
  auto one = [&](int64_t i) {
    gemm(trans_a, trans_b, M, N, K, alpha, A + a_offsets[i], lda, B + b_offsets[i], ldb, beta, C + c_offsets[i], ldc);
  };
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const bool blas_type = std::is_floating_point_v<T>;
  if (batch > 1 && num_threads() > 1 && (work < kSmallGemmWork || !blas_type)) {
    SingleThreadedBlas guard;
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
