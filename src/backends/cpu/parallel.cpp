#include "backends/cpu/parallel.h"

#include <atomic>

extern "C" void openblas_set_num_threads(int);

namespace mpa::cpu {

namespace {
std::atomic<int> g_threads{1};
}

void set_num_threads(int threads) {
  g_threads = std::max(1, threads);
  // The BLAS stays single-threaded: cpu::gemm (gemm.cpp) splits large GEMMs over these OpenMP threads,
  // so one thread pool owns the cores.
  openblas_set_num_threads(1);
}

int num_threads() { return g_threads; }

}  // namespace mpa::cpu
