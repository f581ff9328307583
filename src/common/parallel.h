// The host's loop launcher: splits [0, n) into chunks over a pool of threads, as many as set_num_threads
// allows (the CPU backend sets it for its kernels, the audit's probes share it). A body processes
// [begin, end); small ranges run inline so tiny tensors pay no threading cost.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mpa {

void set_num_threads(int threads);
int num_threads();

// Whether the calling thread is running a parallel_for body (a nested parallel_for then runs inline).
bool in_parallel_region();

// Chunks per thread: on a machine whose cores other processes keep busy, a thread descheduled mid-range holds
// up a quarter of its share instead of all of it, as the others take the rest (bench/contention_bench.py).
// Bodies never depend on the split (results are the same for any --threads).
inline constexpr int64_t kChunksPerThread = 4;

namespace detail {
inline constexpr int64_t kMaxChunks = 1 << 15;  // a loop's chunk count fits 16 bits of the pool's claim word
// Runs chunk(context, c) for every c in [0, chunks) on the calling thread and up to team - 1 pool threads,
// each of which takes its own contiguous share of the chunks first (the caller the first share), so that
// loops over one range give each thread the same part of it. Unlike an OpenMP team, the caller waits only
// for chunks that a pool thread has taken: one that other processes keep off its core never holds the loop
// up, the others take its share instead (as onnxruntime's pool does). The first exception of a chunk is
// rethrown here once every taken chunk is done.
void run_chunks(int64_t chunks, int team, void (*chunk)(void*, int64_t), void* context);
}  // namespace detail

// grain: the least amount of work (in elements) worth a thread.
template <class Body> void parallel_for(int64_t n, int64_t grain, Body&& body) {
  if (n <= 0) return;
  const int threads = num_threads();
  const int64_t worth = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  if (threads <= 1 || worth <= 1 || in_parallel_region()) {
    body(int64_t{0}, n);
    return;
  }
  struct Range {
    Body& body;
    int64_t n, chunks;
  } range{body, n, std::min({threads * kChunksPerThread, worth, detail::kMaxChunks})};
  detail::run_chunks(
      range.chunks, static_cast<int>(std::min<int64_t>(threads, range.chunks)),
      [](void* context, int64_t c) {
        Range& r = *static_cast<Range*>(context);
        r.body(r.n * c / r.chunks, r.n * (c + 1) / r.chunks);
      },
      &range);
}

}  // namespace mpa
