#include "common/parallel.h"

#include <atomic>

namespace mpa {

namespace {
std::atomic<int> g_threads{1};
}

void set_num_threads(int threads) {
  g_threads = std::max(1, threads);
}

int num_threads() { return g_threads; }

}  // namespace mpa
