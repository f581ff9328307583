// The CUDA backend's per-node kernel time from CUPTI records (backends/cuda/kernel_times.h), on hand-made
// records as kineto's tests make them (libkineto/test/CuptiActivityProfilerTest.cpp): no GPU needed.
#include <gtest/gtest.h>

#include "backends/cuda/kernel_times.h"

using mpa::cuda::KernelTimes;

TEST(KernelTimes, ANodesKernelsAreSummedWhicheverRecordComesFirst) {
  KernelTimes times;
  times.correlate(10, 1);          // node run 1 launched correlation 10 and 11
  times.kernel(10, 1'000, 4'000);  // 3 us
  times.kernel(11, 5'000, 5'500);  // kernel record before its correlation record: 0.5 us
  times.correlate(11, 1);
  times.correlate(12, 2);           // node run 2
  times.kernel(12, 9'000, 10'000);  // 1 us
  EXPECT_DOUBLE_EQ(times.take_seconds(1), 3.5e-6);
  EXPECT_DOUBLE_EQ(times.take_seconds(2), 1e-6);
  EXPECT_EQ(times.unmatched(), 0u);
}

TEST(KernelTimes, ANodeWithoutKernelsTookNoTimeAndTagsAreForgotten) {
  KernelTimes times;
  EXPECT_DOUBLE_EQ(times.take_seconds(7), 0.0);  // a view op: no launch
  times.correlate(1, 3);
  times.kernel(1, 100, 300);
  EXPECT_DOUBLE_EQ(times.take_seconds(3), 2e-7);
  EXPECT_DOUBLE_EQ(times.take_seconds(3), 0.0) << "taken once";
  times.kernel(1, 400, 500);  // the correlation's tag was forgotten with it: unclaimed now
  EXPECT_EQ(times.unmatched(), 1u);
  times.kernel(2, 900, 800);  // a reversed interval counts as nothing, not as a wrapped huge time
  times.correlate(2, 4);
  EXPECT_DOUBLE_EQ(times.take_seconds(4), 0.0);
}
