#include "backends/cpu/gemm.h"

#include <cblas.h>
#ifdef MPA_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "common/parallel.h"
#include "common/error.h"

namespace mpa::cpu {

namespace {

// BLAS dimensions are int; larger matrices are user data we cannot take, not a crash.
int blas_int(int64_t v) {
  if (!(v >= 0 && v <= INT32_MAX)) fail("GEMM dimension " + std::to_string(v) + " exceeds the BLAS limit");
  return static_cast<int>(v);
}

// Below this many multiply-adds a GEMM runs on one thread; batches of GEMMs below it run in parallel over
// the batch instead.
constexpr double kParallelGemmWork = 256.0 * 1024;

// The BLAS runs single-threaded: one pool (common/parallel.h) owns the cores, and a large GEMM is split
// here into column (or row) blocks of C, one BLAS call per thread. Two pools spinning on the same cores
// (OpenMP after im2col, OpenBLAS's workers in the GEMM) measured 2x slower end to end on 2 cores.
constexpr int64_t kMaxGemmBlocks = 4;

template <class T, class Blas>
void split_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                int64_t ldb, T* C, int64_t ldc, const GemmBlockDone& done, Blas&& blas) {
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  // The blocks depend on the shape only, never on the thread count or the calling context: the BLAS may sum
  // edge tiles in another order than inner ones, so thread-dependent blocks would make results (and audit
  // reports) differ between --threads settings.
  const bool small = work < kParallelGemmWork || std::max(M, N) < 32;
  const bool split_n = N >= M;
  const int64_t extent = split_n ? N : M, align = split_n ? 16 : 8;
  // Several blocks per thread, handed out dynamically: on a busy machine a descheduled thread then holds
  // up one small block instead of half the GEMM.
  const int64_t blocks = small ? 1 : std::min<int64_t>(kMaxGemmBlocks, std::max<int64_t>(1, extent / (4 * align)));
  if (blocks == 1) {
    blas(M, N, A, B, C);
    if (done) done(0, M, 0, N);
    return;
  }
  // Block boundaries on multiples of `align` keep the BLAS kernels on full panels.
  auto boundary = [&](int64_t b) {
    return b >= blocks ? extent : std::min(extent, (extent * b / blocks + align - 1) / align * align);
  };
  auto run_block = [&](int64_t b) {
    const int64_t lo = boundary(b), hi = boundary(b + 1);
    if (hi <= lo) return;
    if (split_n)
      blas(M, hi - lo, A, B + (trans_b ? lo * ldb : lo), C + lo);
    else
      blas(hi - lo, N, A + (trans_a ? lo : lo * lda), B, C + lo * ldc);
    if (done) split_n ? done(0, M, lo, hi) : done(lo, hi, 0, N);
  };
  // One block per chunk (blocks <= kChunksPerThread * threads).
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) run_block(b);
  });
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

#ifdef MPA_HAVE_DNNL
void dnnl_sgemm_block(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) {
  // oneDNN (built on OpenMP) would spread the block over omp_get_max_threads() threads of its own, and might
  // split K: the block is this thread's, so that results never depend on --threads (split_gemm).
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const dnnl_status_t status =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  omp_set_num_threads(threads);
  if (status != dnnl_success)
    fail("oneDNN sgemm failed (status " + std::to_string(status) + ") on " + std::to_string(m) + "x" +
         std::to_string(n) + "x" + std::to_string(k));
}
#endif

// One block of a plain fp32 GEMM, on the calling thread. Where the build has oneDNN, its sgemm (JIT
// AVX2/AVX-512 kernels) for blocks of at least kParallelGemmWork multiply-adds: 10-15% faster than OpenBLAS
// 0.3.21's on ResNet-50's im2col GEMMs and BERT-base's on this project's machines, but slower on small ones,
// where its set-up per call shows (silero-vad 0.14 -> 0.19 ms; bench/README.md). Both sum the fp32 products
// in fp32, each in its own order.
void sgemm_block(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c, int ldc) {
#ifdef MPA_HAVE_DNNL
  if (static_cast<double>(m) * n * k >= kParallelGemmWork) {
    dnnl_sgemm_block(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
              a, lda, b, ldb, beta, c, ldc);
}

// [SECTION] Reduced-precision GEMM math (GemmMath)

// Per-thread buffers that keep their capacity between calls: emulated GEMMs run once per node and must not
// re-fault megabytes each time. Slots keep simultaneous buffers apart.
enum ScratchSlot { kTf32A, kTf32B, kPartialSum, kRunningSum, kScratchSlots };
float* thread_scratch(ScratchSlot slot, int64_t count) {
  thread_local std::vector<float> buffers[kScratchSlots];
  std::vector<float>& b = buffers[slot];
  if (b.size() < static_cast<size_t>(count)) b.resize(static_cast<size_t>(count));
  return b.data();
}

// Rounds a buffer onto a format's grid, in parallel unless already inside a parallel region.
void round_buffer(Format format, float* data, int64_t n) {
  parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) { round_to_format(format, data + b, e - b); });
}

// A TF32 copy of a stored rows x cols matrix with row stride ld (the copy is dense: its stride is cols).
const float* tf32_copy(ScratchSlot slot, const float* x, int64_t rows, int64_t cols, int64_t ld) {
  float* copy = thread_scratch(slot, rows * cols);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(copy + r * cols, x + r * ld, static_cast<size_t>(cols) * sizeof(float));
  round_buffer(Format::TF32, copy, rows * cols);
  return copy;
}

// One block of C = alpha * op(A) op(B) + beta * C with a half-precision accumulator (CUBLAS_COMPUTE_16F):
// K is summed in chunks of kHalfAccumulationChunk by an fp32 sgemm, and every chunk does
// running = RN(running + RN(partial)); the epilogue alpha * running + beta * C is fp16 arithmetic too.
// Runs on the calling thread (split_gemm hands each thread its own block).
void gemm_half_accumulator(Format grid, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                           int64_t ldc) {
  const int64_t count = M * N;
  float* partial = thread_scratch(kPartialSum, count);
  float* running = thread_scratch(kRunningSum, count);
  std::fill(running, running + count, 0.f);
  for (int64_t k0 = 0; k0 < K; k0 += kHalfAccumulationChunk) {
    const int64_t kc = std::min(kHalfAccumulationChunk, K - k0);
    const float* a = trans_a ? A + k0 * lda : A + k0;
    const float* b = trans_b ? B + k0 : B + k0 * ldb;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                blas_int(M), blas_int(N), blas_int(kc), 1.f, a, blas_int(lda), b, blas_int(ldb), 0.f, partial,
                blas_int(N));
    round_to_format(grid, partial, count);
    for (int64_t i = 0; i < count; ++i) running[i] += partial[i];
    round_to_format(grid, running, count);
  }
  const float alpha_on_grid = round_to_format(grid, alpha), beta_on_grid = round_to_format(grid, beta);
  for (int64_t m = 0; m < M; ++m) {
    float* c = C + m * ldc;
    const float* r = running + m * N;
    for (int64_t n = 0; n < N; ++n) {
      float y = alpha_on_grid == 1.f ? r[n] : round_to_format(grid, alpha_on_grid * r[n]);
      if (beta_on_grid != 0.f) y = round_to_format(grid, y + round_to_format(grid, beta_on_grid * c[n]));
      c[n] = y;
    }
  }
}

}  // namespace

GemmWarmUp::GemmWarmUp() {
#ifdef MPA_HAVE_DNNL
  thread_ = std::thread([] {
    float a[16] = {}, b[16] = {}, c[16] = {};
    dnnl_sgemm_block(false, false, 4, 4, 4, 1.f, a, 4, b, 4, 0.f, c, 4);
  });
#endif
}

GemmWarmUp::~GemmWarmUp() {
  if (thread_.joinable()) thread_.join();
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmMath& math,
          const GemmBlockDone& done) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    scale_only(M, N, beta, C, ldc);  // the BLAS would skip beta * C
    if (done) done(0, M, 0, N);
    return;
  }
  if (math.tf32_operands) {
    // Stored shapes: op(A) is M x K, so A is stored K x M when transposed; likewise B.
    A = tf32_copy(kTf32A, A, trans_a ? K : M, trans_a ? M : K, lda);
    lda = trans_a ? M : K;
    B = tf32_copy(kTf32B, B, trans_b ? N : K, trans_b ? K : N, ldb);
    ldb = trans_b ? K : N;
  }
  const int k = blas_int(K), ia = blas_int(lda), ib = blas_int(ldb), ic = blas_int(ldc);
  if (math.accumulator != Format::FP32) {
    split_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, done,
               [&](int64_t m, int64_t n, const float* a, const float* b, float* c) {
                 gemm_half_accumulator(math.accumulator, trans_a, trans_b, m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
               });
    return;
  }
  split_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, done,
             [&](int64_t m, int64_t n, const float* a, const float* b, float* c) {
               // A single row (or column) of C is a matrix-vector product: sgemm would pack the whole matrix
               // for one pass over it (an LSTM step with batch 1 spent half its time packing), sgemv reads it once.
               if (m == 1)  // c[1 x n] = a[1 x K] op(B)
                 return cblas_sgemv(CblasRowMajor, trans_b ? CblasNoTrans : CblasTrans, trans_b ? blas_int(n) : k,
                                    trans_b ? k : blas_int(n), alpha, b, ib, a, trans_a ? ia : 1, beta, c, 1);
               if (n == 1)  // c[m x 1] = op(A) b[K x 1]
                 return cblas_sgemv(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_a ? k : blas_int(m),
                                    trans_a ? blas_int(m) : k, alpha, a, ia, b, trans_b ? 1 : ib, beta, c, ic);
               sgemm_block(trans_a, trans_b, blas_int(m), blas_int(n), k, alpha, a, ia, b, ib, beta, c, ic);
             });
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc, const GemmMath&,
          const GemmBlockDone& done) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    scale_only(M, N, beta, C, ldc);
    if (done) done(0, M, 0, N);
    return;
  }
  const int k = blas_int(K), ia = blas_int(lda), ib = blas_int(ldb), ic = blas_int(ldc);
  split_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, done,
             [&](int64_t m, int64_t n, const double* a, const double* b, double* c) {
               cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                           blas_int(m), blas_int(n), k, alpha, a, ia, b, ib, beta, c, ic);
             });
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                  const int64_t* a_offsets, const T* B, int64_t ldb, const int64_t* b_offsets, T beta, T* C,
                  int64_t ldc, const int64_t* c_offsets, int64_t batch, const GemmMath& math) {
  auto one = [&](int64_t i) {
    gemm(trans_a, trans_b, M, N, K, alpha, A + a_offsets[i], lda, B + b_offsets[i], ldb, beta, C + c_offsets[i], ldc,
         math);
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
                                const T*, int64_t, const int64_t*, T, T*, int64_t, const int64_t*, int64_t,       \
                                const GemmMath&);
MPA_GEMM_BATCHED(float)
MPA_GEMM_BATCHED(double)
MPA_GEMM_BATCHED(int32_t)
MPA_GEMM_BATCHED(int64_t)
MPA_GEMM_BATCHED(uint32_t)
MPA_GEMM_BATCHED(uint64_t)
#undef MPA_GEMM_BATCHED

std::optional<std::string> blas_kernels_to_force() {
  if (std::getenv("OPENBLAS_CORETYPE")) return std::nullopt;
  static const std::set<std::string> avx512_kernels = {"skylakex", "cooperlake", "sapphirerapids"};
  static const std::set<std::string> avx2_kernels = {"haswell", "zen"};
  const std::string chosen = openblas_get_corename();
  if (avx512_kernels.count(chosen)) return std::nullopt;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (avx2_kernels.count(chosen)) return std::nullopt;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return std::nullopt;
}

}  // namespace mpa::cpu
