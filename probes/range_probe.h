// Range of a tensor's values: count, min, max, absmax, mean, std, zeros, NaN, +Inf, -Inf.
#pragma once
#include "probes/probe_common.h"

namespace mpa::probes {

struct RangeProbe {
  struct Chunk {
    int64_t count = 0, finite = 0, zeros = 0, nan = 0, pos_inf = 0, neg_inf = 0;
    double min = INFINITY, max = -INFINITY, sum = 0, sum_sq = 0;
    void add(double x) {
      ++count;
      if (std::isnan(x)) return void(++nan);
      if (std::isinf(x)) return void(x > 0 ? ++pos_inf : ++neg_inf);
      ++finite;
      zeros += x == 0;
      min = std::min(min, x);
      max = std::max(max, x);
      sum += x;
      sum_sq += x * x;
    }
  };
  int64_t count = 0, finite = 0, zeros = 0, nan = 0, pos_inf = 0, neg_inf = 0;
  double min = INFINITY, max = -INFINITY;  // over finite values
  ExactSum sum, sum_sq;

  void absorb(const Chunk& c);
  void merge(const RangeProbe& other);
  template <class Counts> void add_counts(const Counts& counts);
  double absmax() const { return finite ? std::max(std::fabs(min), std::fabs(max)) : 0.0; }
  double mean() const;
  double std_dev() const;
  json to_json() const;
  static RangeProbe from_json(const json& j);
};

}  // namespace mpa::probes
