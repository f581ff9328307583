// The memory budget's accounting (common/memory_budget.h): every host tensor is charged while alive, a tensor
// beyond the budget is refused with MemoryBudgetExceeded (an Error: exit code 2), --max-memory's syntax; and
// an exception thrown in a parallel_for body reaches the caller instead of ending the process.
#include <gtest/gtest.h>

#include <atomic>

#include "common/memory_budget.h"
#include "common/parallel.h"
#include "tensor/tensor.h"

using namespace mpa;
namespace budget = mpa::memory_budget;

namespace {

// Sets a budget for one test and puts the previous one back.
class ScopedBudget {
 public:
  explicit ScopedBudget(int64_t bytes) : previous_(budget::limit()) { budget::set_limit(bytes); }
  ~ScopedBudget() { budget::set_limit(previous_); }

 private:
  int64_t previous_;
};

}  // namespace

TEST(MemoryBudget, TensorsAreChargedWhileAliveAndBigOnesAcrossCopies) {
  const int64_t before = budget::in_use();
  {
    Tensor small(DType::Float32, {256});                // from the size cache
    Tensor large(DType::Float32, {4, 1024, 1024 + 1});  // beyond it
    EXPECT_EQ(budget::in_use() - before, 256 * 4 + 4 * 1024 * 1025 * 4);
    Tensor alias = large;  // shares the bytes: charged once
    Tensor reshaped = large.reshaped({4 * 1024 * 1025});
    EXPECT_EQ(budget::in_use() - before, 256 * 4 + 4 * 1024 * 1025 * 4);
  }
  EXPECT_EQ(budget::in_use(), before);
  {
    Tensor adopted = Tensor::adopt(DType::Float32, {64}, std::string(256, '\1'));
    EXPECT_EQ(budget::in_use() - before, 256);
  }
  EXPECT_EQ(budget::in_use(), before);
}

TEST(MemoryBudget, ATensorBeyondTheBudgetIsRefusedNamingItsShape) {
  const ScopedBudget scoped(budget::in_use() + (int64_t{8} << 20));
  Tensor first(DType::Float32, {1024, 1024});  // 4 MiB of the 8 left
  try {
    Tensor second(DType::Float32, {2, 1024, 1024});
    FAIL() << "8 MiB more were allowed";
  } catch (const MemoryBudgetExceeded& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("a float32 tensor of shape 2x1024x1024 needs 8.0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("--max-memory"), std::string::npos) << message;
  }
  EXPECT_THROW(Tensor::adopt(DType::Float32, {2, 1024, 1024}, std::string(size_t{8} << 20, '\0')),
               MemoryBudgetExceeded);
  const int64_t held = budget::in_use();
  Tensor fits(DType::Float32, {1024, 1024});  // the refused ones left nothing charged
  EXPECT_EQ(budget::in_use() - held, 4 << 20);
  EXPECT_THROW(budget::require("the next one", uint64_t{1} << 20), MemoryBudgetExceeded);
}

TEST(MemoryBudget, SizesAreReadStrictly) {
  EXPECT_EQ(budget::parse_size("1048576"), int64_t{1} << 20);
  EXPECT_EQ(budget::parse_size("8G"), int64_t{8} << 30);
  EXPECT_EQ(budget::parse_size("8GB"), int64_t{8} << 30);
  EXPECT_EQ(budget::parse_size("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(budget::parse_size("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(budget::parse_size("64K"), int64_t{64} << 10);
  EXPECT_EQ(budget::parse_size("2T"), int64_t{2} << 40);
  EXPECT_EQ(budget::parse_size("8g"), int64_t{8} << 30);
  EXPECT_EQ(budget::parse_size("512mib"), int64_t{512} << 20);
  EXPECT_TRUE(budget::parse_size("100%").has_value());
  EXPECT_TRUE(budget::parse_size("12.5%").has_value());
  for (const char* bad : {"", "0", "0.5", "-1G", "8X", "G", "1e9", "1.5.2G", "150%", " 8G", "8G ", "8 G", "nan", "inf"})
    EXPECT_FALSE(budget::parse_size(bad).has_value()) << bad;
  EXPECT_GT(budget::default_limit(), 0);
}

TEST(MemoryBudget, BytesReadAsPeopleWriteThem) {
  EXPECT_EQ(budget::bytes_text(900), "900 bytes");
  EXPECT_EQ(budget::bytes_text(1536), "1.5 KiB");
  EXPECT_EQ(budget::bytes_text(uint64_t{12} << 30), "12.0 GiB");
  EXPECT_EQ(budget::bytes_text(40000000000), "37.3 GiB");
}

TEST(Parallel, AnExceptionInOneChunkReachesTheCaller) {
  const int threads = num_threads();
  set_num_threads(4);
  std::atomic<int> chunks{0};
  EXPECT_THROW(parallel_for(4000, 1,
                            [&](int64_t begin, int64_t) {
                              ++chunks;
                              if (begin == 0) fail("chunk 0 failed");
                            }),
               Error);
  EXPECT_EQ(chunks.load(), 4 * kChunksPerThread);  // the other chunks ran to their end
  set_num_threads(threads);
}
