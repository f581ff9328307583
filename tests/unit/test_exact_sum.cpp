#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <random>

#include "common/error.h"
#include "probes/exact_sum.h"

using mpa::ExactSum;

TEST(ExactSum, IsExactWhereDoubleSummationLosesEverything) {
  ExactSum s;
  s.add(1e300);
  s.add(1.0);
  s.add(-1e300);
  EXPECT_EQ(s.value(), 1.0);
  ExactSum t;
  t.add(0x1p-1074);  // smallest subnormal
  t.add(0x1.fffffffffffffp1023);
  t.add(-0x1.fffffffffffffp1023);
  EXPECT_EQ(t.value(), 0x1p-1074);
}

TEST(ExactSum, GroupingDoesNotChangeTheResult) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  std::vector<double> values(5000);
  for (double& v : values) v = normal(rng) * std::pow(10.0, static_cast<int>(rng() % 40) - 20);
  ExactSum all, first, second;
  for (size_t i = 0; i < values.size(); ++i) {
    all.add(values[i]);
    (i < 1234 ? first : second).add(values[i]);
  }
  ExactSum merged = second;
  merged.add(first);
  EXPECT_EQ(merged, all);
  EXPECT_EQ(merged.to_string(), all.to_string());
  // Against a long-double reference the result is within one rounding of the true sum.
  long double reference = 0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end(), [](double a, double b) { return std::fabs(a) < std::fabs(b); });
  for (double v : sorted) reference += v;
  EXPECT_NEAR(all.value(), static_cast<double>(reference), std::fabs(static_cast<double>(reference)) * 1e-15);
}

TEST(ExactSum, TextFormRoundTrips) {
  for (double v : {0.0, 1.0, -2.5, 1e-300, -3e200, 0x1p-1074}) {
    ExactSum s;
    s.add(v);
    s.add(v / 3);
    EXPECT_EQ(ExactSum::parse(s.to_string()), s) << s.to_string();
    EXPECT_EQ(ExactSum::parse(s.to_string()).value(), s.value());
  }
  ExactSum inf;
  inf.add(INFINITY);
  EXPECT_EQ(ExactSum::parse(inf.to_string()).value(), INFINITY);
  EXPECT_THROW(ExactSum::parse("12zzp-1088"), mpa::Error);
}
