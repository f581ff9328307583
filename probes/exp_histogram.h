// Exponent histogram: one bin per power of two over [2^-40, 2^41), plus bins for zero, below the range,
// above it, Inf and NaN. The edges are the same for every tensor, so histograms merge by adding.
// Bin layout (index: meaning): 0 zero, 1 |x| < 2^-40, 2+k for 2^(k-40) <= |x| < 2^(k-39) (k = 0..80),
// 83 |x| >= 2^41, 84 +-Inf, 85 NaN.
#pragma once
#include <array>

#include "probes/probe_common.h"

namespace mpa::probes {

struct ExpHistogram {
  using Bins = kernels::HistogramBins;
  static constexpr int kMinExp = Bins::kMinExp, kMaxExp = Bins::kMaxExp, kBins = Bins::kBins, kZero = Bins::kZero,
                       kBelow = Bins::kBelow, kFirstPow = Bins::kFirstPow, kAbove = Bins::kAbove, kInf = Bins::kInf,
                       kNan = Bins::kNan;
  static int bin_of(double x) { return Bins::bin_of(x); }
  using Chunk = kernels::HistogramChunk;
  std::array<int64_t, kBins> counts{};
  void absorb(const Chunk& c) {
    for (int i = 0; i < kBins; ++i) counts[static_cast<size_t>(i)] += c.counts[static_cast<size_t>(i)];
  }
  void merge(const ExpHistogram& o) {
    for (int i = 0; i < kBins; ++i) counts[static_cast<size_t>(i)] += o.counts[static_cast<size_t>(i)];
  }
  json to_json() const { return json(counts); }
  static ExpHistogram from_json(const json& j) {
    ExpHistogram h;
    require(j.is_array() && j.size() == kBins, "exp_hist must hold " + std::to_string(kBins) + " counts");
    for (int i = 0; i < kBins; ++i) h.counts[static_cast<size_t>(i)] = j[static_cast<size_t>(i)].get<int64_t>();
    return h;
  }
  // The layout, written once at the top of a report.
  static json layout() {
    return {{"min_exp", kMinExp},
            {"max_exp", kMaxExp},
            {"bins", "[zero, below 2^min_exp, one per exponent e in min_exp..max_exp for 2^e <= |x| < 2^(e+1), "
                     "at or above 2^(max_exp+1), inf, nan]"}};
  }
};

}  // namespace mpa::probes
