// Range of a tensor's values: count, min, max, absmax, mean, std, zeros, NaN, +Inf, -Inf.
#pragma once
#include "probes/probe_common.h"

namespace mpa::probes {

struct RangeProbe {
  using Chunk = kernels::RangeChunk;
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
