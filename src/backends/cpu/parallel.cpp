#include "backends/cpu/parallel.h"

#include <atomic>

extern "C" void openblas_set_num_threads(int);

namespace mpa::cpu {

namespace {
std::atomic<int> g_threads{1};
}

void set_num_threads(int threads) {
  g_threads = std::max(1, threads);
  openblas_set_num_threads(g_threads);
}

int num_threads() { return g_threads; }

}  // namespace mpa::cpu
