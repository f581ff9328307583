// The loop launcher's pool (common/parallel.h): every index runs once whatever the thread count and grain,
// each thread takes its own share of a loop's chunks first, a body's own parallel_for runs inline, and loops
// started from several threads at once all complete (one takes the pool, the others run inline).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/parallel.h"

using namespace mpa;

namespace {

class ThreadsSetting {
 public:
  explicit ThreadsSetting(int threads) : saved_(num_threads()) { set_num_threads(threads); }
  ~ThreadsSetting() { set_num_threads(saved_); }

 private:
  int saved_;
};

// How many times each index of [0, n) was visited.
std::vector<int> visits(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
  parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) ++counts[static_cast<size_t>(i)];
  });
  std::vector<int> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

}  // namespace

TEST(Parallel, EveryIndexRunsOnceForAnyThreadsAndGrain) {
  for (int threads : {1, 2, 3, 8}) {
    const ThreadsSetting setting(threads);
    for (int64_t n : {1, 7, 64, 1000, 100003})
      for (int64_t grain : {1, 16, 4096}) {
        const std::vector<int> v = visits(n, grain);
        EXPECT_EQ(std::count(v.begin(), v.end(), 1), n) << "threads " << threads << " n " << n << " grain " << grain;
      }
  }
}

// The calling thread's share is the loop's first half, the pool thread's the second: consecutive loops over one
// range give each thread the same part. With slow chunks the pool thread starts on the first chunk of its half,
// where taking chunks in order from one counter would hand it the second chunk and leave it the odd ones.
TEST(Parallel, EachThreadTakesItsOwnShareOfTheChunksFirst) {
  const ThreadsSetting setting(2);
  const int64_t chunks = 2 * kChunksPerThread;  // a loop of this many indices, grain 1, has one index per chunk
  const std::thread::id caller = std::this_thread::get_id();
  int caller_took_first = 0, pool_took_half = 0;
  const int loops = 50;
  for (int loop = 0; loop < loops; ++loop) {
    std::vector<std::thread::id> ran(static_cast<size_t>(chunks));
    parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        ran[static_cast<size_t>(c)] = std::this_thread::get_id();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    caller_took_first += ran.front() == caller;
    pool_took_half += ran[static_cast<size_t>(chunks / 2)] != caller;
  }
  // Not all loops: a pool thread kept off its core by other processes has its share taken by the caller.
  EXPECT_GE(caller_took_first, loops * 4 / 5);
  EXPECT_GE(pool_took_half, loops / 2);
}

TEST(Parallel, NestedLoopsRunInline) {
  const ThreadsSetting setting(4);
  EXPECT_FALSE(in_parallel_region());
  std::atomic<int> outer{0}, inner{0}, nested_inline{0};
  parallel_for(64, 1, [&](int64_t begin, int64_t end) {
    outer += static_cast<int>(end - begin);
    nested_inline += in_parallel_region() ? 1 : 0;
    const std::thread::id me = std::this_thread::get_id();
    parallel_for(100, 1, [&](int64_t b, int64_t e) {
      EXPECT_EQ(std::this_thread::get_id(), me);
      inner += static_cast<int>(e - b);
    });
  });
  EXPECT_EQ(outer.load(), 64);
  EXPECT_EQ(inner.load(), 100 * 4 * static_cast<int>(kChunksPerThread));
  EXPECT_EQ(nested_inline.load(), 4 * static_cast<int>(kChunksPerThread));
  EXPECT_FALSE(in_parallel_region());
}

TEST(Parallel, LoopsFromSeveralThreadsAtOnceAllComplete) {
  const ThreadsSetting setting(2);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round)
        parallel_for(10000, 1, [&](int64_t begin, int64_t end) { total += end - begin; });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), int64_t{4} * 200 * 10000);
}
