// The loop launcher's pool (common/parallel.h): every index runs once whatever the thread count and grain,
// a body's own parallel_for runs inline, and loops started from several threads at once all complete (one
// takes the pool, the others run inline).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
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
