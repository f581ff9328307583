// Statistics throughput of `mpaudit tensors` on one core: analyse_tensor (range, exponent histogram, format
// fit and scale window for fp16, bf16, fp8e4m3 and fp8e5m2) over a float32 tensor already in memory, as
// gradients look (normal values, a few of them tiny enough to flush). Counter bytes_per_second is of
// float32 input; bench/tensors_bench.py runs it and the command end to end.
#include <benchmark/benchmark.h>

#include <random>

#include "common/parallel.h"
#include "tensors/tensor_stats.h"

using namespace mpa;

namespace {

Tensor gradient_like(int64_t n) {
  Tensor t(DType::Float32, {n});
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1e-3f);
  float* x = t.data<float>();
  for (int64_t i = 0; i < n; ++i) x[i] = (i % 1000 == 0 ? 1e-6f : 1.f) * normal(rng);
  return t;
}

void BM_AnalyseFloat32(benchmark::State& state) {
  set_num_threads(1);
  const Tensor t = gradient_like(state.range(0));
  const Format formats[] = {Format::FP16, Format::BF16, Format::FP8E4M3FN, Format::FP8E5M2};
  for (auto _ : state) benchmark::DoNotOptimize(tensors::analyse_tensor(t, formats, 1e-3));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(t.nbytes()));
}
BENCHMARK(BM_AnalyseFloat32)
    ->Arg(int64_t{1} << 20)
    ->Arg(int64_t{1} << 26)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
