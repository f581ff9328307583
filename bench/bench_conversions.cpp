// Throughput of the number-format conversions (src/tensor/formats.h) on one core, per dispatch path.
// GB/s counts bytes of float input (or, for decodes, of float output) per second, so the figures compare
// directly with memory bandwidth. The buffer fits the L2/L3 caches by default: the point is the
// conversion cost, not DRAM; pass --benchmark_filter to pick cases.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tensor/formats.h"

using namespace mpa;

namespace {

constexpr int64_t kElements = 1 << 18;  // 1 MiB of floats

// Activations-like values: mostly within FP16 range, a tail that overflows FP8/FP16, some tiny ones.
const std::vector<float>& sample_floats() {
  static const std::vector<float> values = [] {
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_real_distribution<float> exponent(-30.f, 20.f);
    std::vector<float> v(kElements);
    for (float& x : v) x = normal(rng) * std::exp2(exponent(rng));
    return v;
  }();
  return values;
}

void report(benchmark::State& state, int64_t bytes_per_iteration) {
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes_per_iteration) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
}

void bench_encode(benchmark::State& state, ConversionPath path, bool bfloat) {
  const std::vector<float>& in = sample_floats();
  std::vector<uint16_t> out(kElements);
  for (auto _ : state) {
    if (bfloat)
      floats_to_bfloat16(in.data(), out.data(), kElements, path);
    else
      floats_to_half(in.data(), out.data(), kElements, path);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, kElements * sizeof(float));
}

void bench_decode(benchmark::State& state, ConversionPath path, bool bfloat) {
  std::vector<uint16_t> in(kElements);
  if (bfloat)
    floats_to_bfloat16(sample_floats().data(), in.data(), kElements);
  else
    floats_to_half(sample_floats().data(), in.data(), kElements);
  std::vector<float> out(kElements);
  for (auto _ : state) {
    if (bfloat)
      bfloat16s_to_float(in.data(), out.data(), kElements, path);
    else
      halves_to_float(in.data(), out.data(), kElements, path);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, kElements * sizeof(float));
}

// In place, as FP16 emulation runs it. Later iterations round already-rounded values; that costs the
// same, because every value stays in its range class (normal, subnormal, overflow) and the scalar
// path's branches depend on nothing else.
void bench_round(benchmark::State& state, ConversionPath path, Format format) {
  std::vector<float> data = sample_floats();
  for (auto _ : state) {
    round_to_format(format, data.data(), kElements, path);
    benchmark::DoNotOptimize(data.data());
    benchmark::ClobberMemory();
  }
  report(state, kElements * sizeof(float));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (ConversionPath path : {ConversionPath::Scalar, ConversionPath::Avx2, ConversionPath::Avx512}) {
    if (path > best_conversion_path()) continue;
    const std::string suffix = "/" + std::string(conversion_path_name(path));
    benchmark::RegisterBenchmark(("floats_to_half" + suffix).c_str(), bench_encode, path, false);
    benchmark::RegisterBenchmark(("floats_to_bfloat16" + suffix).c_str(), bench_encode, path, true);
    benchmark::RegisterBenchmark(("halves_to_float" + suffix).c_str(), bench_decode, path, false);
    benchmark::RegisterBenchmark(("bfloat16s_to_float" + suffix).c_str(), bench_decode, path, true);
    for (Format format : {Format::FP16, Format::BF16, Format::TF32, Format::FP8E4M3FN, Format::FP8E5M2})
      benchmark::RegisterBenchmark(("round_to_format_" + std::string(format_name(format)) + suffix).c_str(),
                                   bench_round, path, format);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
