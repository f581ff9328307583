// The host's loop launcher: splits [0, n) into chunks over OpenMP threads, as many as set_num_threads
// allows (the CPU backend sets it for its kernels, the audit's probes share it). A body processes
// [begin, end); small ranges run inline so tiny tensors pay no threading cost.
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mpa {

void set_num_threads(int threads);
int num_threads();

// Chunks per thread, handed out dynamically: on a machine whose cores other processes keep busy, a thread
// descheduled mid-range holds up a quarter of its share instead of all of it, as the others take the rest
// (bench/contention_bench.py). Bodies never depend on the split (results are the same for any --threads).
inline constexpr int64_t kChunksPerThread = 4;

// grain: the least amount of work (in elements) worth a thread.
template <class Body> void parallel_for(int64_t n, int64_t grain, Body&& body) {
  if (n <= 0) return;
  const int threads = num_threads();
  const int64_t worth = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  if (threads <= 1 || worth <= 1) {
    body(int64_t{0}, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads * kChunksPerThread, worth);
  // An exception may not leave an OpenMP region (std::terminate): the first one is kept and rethrown after.
  std::exception_ptr failure;
#pragma omp parallel for num_threads(static_cast<int>(std::min<int64_t>(threads, chunks))) schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    try {
      body(begin, end);
    } catch (...) {
#pragma omp critical(mpa_parallel_for_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace mpa
