// Seeded standard-normal test data, the same values on every machine for a seed (std::mt19937 is specified;
// the distribution is libstdc++'s, which the tests are built with).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace mpa::test {

inline std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

}  // namespace mpa::test
