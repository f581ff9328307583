// Per-value cost of the probes' vector kernels (probes/fast_paths.h) on one core: what the audit spends on
// every reference value (range, exponent histogram, format fit) and on every pair of a reference value
// with its runs in the target format (divergences of the stored, isolated and propagated runs in one
// pass). Counter "ns/value" is per reference value. The chunk is the probes' own (kChunk values), so the
// data sits in L1/L2 as it does when the audit reads a tensor chunk by chunk.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "probes/fast_paths.h"
#include "tensor/formats.h"

using namespace mpa;
using namespace mpa::probes;

namespace {

// A ReLU-like activation (half zeros) and its runs in FP16: stored, and two with small extra errors.
struct Data {
  std::vector<float> reference, stored, isolated, propagated;
};

const Data& data() {
  static const Data d = [] {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.f, 1.f);
    Data out;
    for (int64_t i = 0; i < kChunk; ++i) {
      const float r = std::max(0.f, 4.f * normal(rng));
      out.reference.push_back(r);
      out.stored.push_back(round_to_format(Format::FP16, r));
      out.isolated.push_back(round_to_format(Format::FP16, r * (1 + 1e-3f * normal(rng))));
      out.propagated.push_back(round_to_format(Format::FP16, r * (1 + 1e-2f * normal(rng))));
    }
    return out;
  }();
  return d;
}

// Nanoseconds per value: the inverse of a rate of (values / 1e9) per second.
void per_value(benchmark::State& state) {
  state.counters["ns/value"] = benchmark::Counter(
      1e-9 * static_cast<double>(kChunk), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_DivergencesOfThreeRuns(benchmark::State& state) {
  const Data& d = data();
  const float* runs[3] = {d.stored.data(), d.isolated.data(), d.propagated.data()};
  const Divergence::Params params(Format::FP16, Tolerances{});
  for (auto _ : state) {
    Divergence::Chunk chunks[3];
    fast::divergences(d.reference.data(), runs, 3, kChunk, params, chunks);
    benchmark::DoNotOptimize(chunks);
  }
  per_value(state);
}

void BM_ReferenceFigures(benchmark::State& state) {
  const Data& d = data();
  const FormatFit::Bounds fp16(Format::FP16);
  for (auto _ : state) {
    RangeProbe::Chunk range;
    ExpHistogram::Chunk hist;
    FormatFit::Chunk fit;
    fast::range(d.reference.data(), kChunk, range);
    fast::histogram(d.reference.data(), kChunk, hist);
    fast::format_fit(d.reference.data(), kChunk, fp16, fit);
    benchmark::DoNotOptimize(&range);
    benchmark::DoNotOptimize(&hist);
    benchmark::DoNotOptimize(&fit);
  }
  per_value(state);
}

void BM_Histogram(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state) {
    ExpHistogram::Chunk hist;
    fast::histogram(d.propagated.data(), kChunk, hist);
    benchmark::DoNotOptimize(&hist);
  }
  per_value(state);
}

}  // namespace

BENCHMARK(BM_DivergencesOfThreeRuns);
BENCHMARK(BM_ReferenceFigures);
BENCHMARK(BM_Histogram);
BENCHMARK_MAIN();
