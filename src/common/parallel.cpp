#include "common/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MPA_CPU_RELAX() _mm_pause()
#else
#define MPA_CPU_RELAX() std::this_thread::yield()
#endif

namespace mpa {

namespace {

std::atomic<int> g_threads{1};
thread_local bool t_in_region = false;

// How long an idle pool thread polls for the next loop before it sleeps: a run's parallel loops follow each
// other within microseconds, so a short poll catches them without a wake-up; on a machine whose cores are
// busy with other processes a longer one burns time slices that the thread the loop waits for needs
// (libgomp's default spin of 300,000 pauses stalled a bench LSTM run from 51 ms to 6.2 s under load).
constexpr int kPollsBeforeSleep = 4000;

// One loop at a time; a caller that finds the pool busy (another thread's loop) runs its loop inline.
// A loop's chunks are split into one share per member of its team (the caller is member 0, pool thread i
// member i + 1), in order: each member takes its own share's chunks first, then what is left of the others'.
// Consecutive loops over the same range thus give a member the same part of it, whose values stay in that
// core's cache (on this project's 2-core VM a value written on one core and read on the other moves at some
// 18 GB/s), while a member that other processes keep off its core has its chunks taken by the others.
// A share is one word, generation << 32 | end << 16 | next chunk, and a chunk is taken by advancing it: a
// pool thread that wakes late takes a chunk of the loop it read or none, never one of the next loop, and
// while it holds a chunk its loop (chunk_, context_) cannot end.
class Pool {
 public:
  void run(int64_t chunks, int team, void (*chunk)(void*, int64_t), void* context) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return run_inline(chunks, chunk, context);
    team = std::min(team, kMaxTeam);
    grow(team - 1);
    chunk_ = chunk;
    context_ = context;
    const int members = std::min(team, 1 + static_cast<int>(threads_.size()));
    members_.store(members, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    failure_ = nullptr;
    const uint64_t generation = (published_.load(std::memory_order_relaxed) + uint64_t{1}) & 0xffffffffu;
    for (int m = 0; m < members; ++m)
      shares_[m].claim.store(generation << 32 | static_cast<uint64_t>(chunks * (m + 1) / members) << 16 |
                                 static_cast<uint64_t>(chunks * m / members),
                             std::memory_order_relaxed);
    published_.store(static_cast<uint32_t>(generation), std::memory_order_release);
    published_.notify_all();
    t_in_region = true;
    work(generation, 0);
    t_in_region = false;
    // Only chunks that running pool threads took are left. No yield: on a loaded machine it hands the core to
    // another process for a whole time slice, where the chunk being waited for takes microseconds.
    while (done_.load(std::memory_order_acquire) < chunks) MPA_CPU_RELAX();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  // Threads in one loop at most (the shares are a fixed array); more are left to wait.
  static constexpr int kMaxTeam = 256;

  static void run_inline(int64_t chunks, void (*chunk)(void*, int64_t), void* context) {
    const bool was = t_in_region;
    t_in_region = true;
    try {
      for (int64_t c = 0; c < chunks; ++c) chunk(context, c);
    } catch (...) {
      t_in_region = was;
      throw;
    }
    t_in_region = was;
  }

  // The next chunk of `share` in loop `generation`, or -1 where it has none left.
  static int64_t take(std::atomic<uint64_t>& share, uint64_t generation) {
    uint64_t claim = share.load(std::memory_order_acquire);
    do {
      if ((claim >> 32) != generation || (claim & 0xffff) >= ((claim >> 16) & 0xffff)) return -1;
    } while (!share.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel));
    return static_cast<int64_t>(claim & 0xffff);
  }

  // Takes and runs chunks of loop `generation`, those of member `self`'s share first, until none is left.
  void work(uint64_t generation, int self) {
    const int members = members_.load(std::memory_order_relaxed);
    for (int k = 0; k < members; ++k)
      for (int64_t c; (c = take(shares_[(self + k) % members].claim, generation)) >= 0;) {
        try {
          chunk_(context_, c);
        } catch (...) {
          std::lock_guard<std::mutex> lock(failure_mutex_);
          if (!failure_) failure_ = std::current_exception();
        }
        done_.fetch_add(1, std::memory_order_acq_rel);
      }
  }

  // Where the system refuses another thread, the loops run on the threads there are.
  void grow(int helpers) {
    try {
      while (static_cast<int>(threads_.size()) < helpers) {
        const int index = static_cast<int>(threads_.size());
        threads_.emplace_back([this, index] { serve(index); }).detach();
      }
    } catch (const std::system_error&) {
    }
  }

  void serve(int index) {
    t_in_region = true;  // a body's own parallel_for runs inline
#ifdef _OPENMP
    // Libraries built on OpenMP (OpenBLAS's openmp variant, oneDNN) size their parallel regions by the calling
    // thread's omp_get_max_threads(), which on a thread OpenMP did not start is the core count: the chunk is
    // this thread's share, run it on this thread.
    omp_set_num_threads(1);
#endif
    uint32_t seen = published_.load(std::memory_order_acquire);
    for (;;) {
      uint32_t now = published_.load(std::memory_order_acquire);
      for (int polls = 0; now == seen && polls < kPollsBeforeSleep; ++polls) {
        MPA_CPU_RELAX();
        now = published_.load(std::memory_order_acquire);
      }
      if (now == seen) {
        published_.wait(seen, std::memory_order_acquire);
        continue;
      }
      seen = now;
      // A stale members_ (of the loop before) only decides whether this thread helps.
      if (index + 1 < members_.load(std::memory_order_relaxed)) work(now, index + 1);
    }
  }

  std::mutex busy_, failure_mutex_;
  std::vector<std::thread> threads_;
  struct alignas(64) Share {
    std::atomic<uint64_t> claim{0};
  };
  Share shares_[kMaxTeam];
  std::atomic<uint32_t> published_{0};
  std::atomic<int> members_{0};
  std::atomic<int64_t> done_{0};
  void (*chunk_)(void*, int64_t) = nullptr;
  void* context_ = nullptr;
  std::exception_ptr failure_;
};

}  // namespace

void set_num_threads(int threads) { g_threads = std::max(1, threads); }

int num_threads() { return g_threads; }

bool in_parallel_region() { return t_in_region; }

void detail::run_chunks(int64_t chunks, int team, void (*chunk)(void*, int64_t), void* context) {
  static Pool* pool = new Pool;  // never destroyed: its threads may still be waiting when the process exits
  pool->run(chunks, team, chunk, context);
}

}  // namespace mpa
