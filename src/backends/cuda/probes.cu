// The audit's probes where the values are (Backend::probe): one block per chunk and task, the task being
// the reference's own figures (range, exponent histogram, format fits) or one run's divergence from it
// (with the run's histogram). Each thread adds its elements with the shared per-element code
// (kernels/probe_chunks.h), the block merges the threads' partial chunks in a fixed tree (warp shuffles,
// then the warps' results), and histograms count in shared memory with integer atomics: the same inputs
// give the same bits, counts, extremes and histograms equal the host's, and sums differ from the host's by
// association only. Only the chunks are copied back.
#include <cuda_runtime.h>

#include "backends/cuda/cuda_backend.h"
#include "tensor/dtype.h"

namespace mpa::cuda {
namespace {

constexpr int kProbeThreads = 256;
constexpr int kMaxFits = 8;  // formats per request; more go to the host
constexpr int kMaxRuns = 8;  // runs per request; more go to the host

// A floating tensor's elements, read as double whatever their storage.
struct Values {
  const void* data = nullptr;
  DType dtype = DType::Float32;
  __device__ double operator[](int64_t i) const {
    switch (dtype) {
      case DType::Float64: return static_cast<const double*>(data)[i];
      case DType::Float16: return load(static_cast<const Float16*>(data)[i]);
      case DType::BFloat16: return load(static_cast<const BFloat16*>(data)[i]);
      default: return static_cast<const float*>(data)[i];
    }
  }
};

struct ProbeArgs {
  Values reference;
  Values runs[kMaxRuns];
  bool run_histograms[kMaxRuns];
  int run_count;
  kernels::FitBounds fits[kMaxFits];
  int fit_count;
  bool reference_figures;
  kernels::DivergenceParams params;
  int64_t n, chunk;
  kernels::RangeChunk* range;
  kernels::HistogramChunk* hist;
  kernels::FitChunk* fit_out;
  kernels::DivergenceChunk* run_out;
  kernels::HistogramChunk* run_hist_out;
};

// A chunk's fields moved down the warp, eight bytes at a time (every chunk type is made of 8-byte fields).
template <class Chunk>
__device__ Chunk shuffled_down(const Chunk& value, int offset) {
  static_assert(sizeof(Chunk) % 8 == 0, "probe chunks are made of 8-byte fields");
  Chunk out;
  const auto* in = reinterpret_cast<const long long*>(&value);
  auto* to = reinterpret_cast<long long*>(&out);
  for (int w = 0; w < static_cast<int>(sizeof(Chunk) / 8); ++w) to[w] = __shfl_down_sync(0xffffffffu, in[w], offset);
  return out;
}

// The block's partial chunks merged into thread 0's, in a fixed order: within each warp, then across warps.
template <class Chunk>
__device__ void merge_block(Chunk& value, unsigned char* scratch) {
  Chunk* warps = reinterpret_cast<Chunk*>(scratch);
  for (int offset = 16; offset > 0; offset /= 2) value.merge(shuffled_down(value, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warps[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < static_cast<int>(blockDim.x / 32) ? warps[lane] : Chunk{};
    for (int offset = 16; offset > 0; offset /= 2) value.merge(shuffled_down(value, offset));
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kProbeThreads) probe_chunks(ProbeArgs a) {
  using Bins = kernels::HistogramBins;
  __shared__ unsigned long long bins[Bins::kBins];
  __shared__ __align__(16) unsigned char scratch[32 * sizeof(kernels::DivergenceChunk)];
  const int64_t chunk = blockIdx.x;
  const int task = static_cast<int>(blockIdx.y);  // 0: the reference's figures, 1 + j: run j
  const int64_t begin = chunk * a.chunk, end = min(a.n, begin + a.chunk);
  const bool histogram = task == 0 ? a.reference_figures : a.run_histograms[task - 1];
  for (int b = threadIdx.x; b < Bins::kBins; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  if (task == 0) {
    kernels::RangeChunk range;
    kernels::FitChunk fits[kMaxFits];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      const double x = a.reference[i];
      if (a.reference_figures) {
        range.add(x);
        atomicAdd(&bins[Bins::bin_of(x)], 1ull);
      }
      for (int f = 0; f < a.fit_count; ++f) fits[f].add(x, a.fits[f]);
    }
    if (a.reference_figures) {
      merge_block(range, scratch);
      if (threadIdx.x == 0) a.range[chunk] = range;
    }
    for (int f = 0; f < a.fit_count; ++f) {
      merge_block(fits[f], scratch);
      if (threadIdx.x == 0) a.fit_out[chunk * a.fit_count + f] = fits[f];
    }
  } else {
    const Values run = a.runs[task - 1];
    kernels::DivergenceChunk divergence;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      const double t = run[i];
      divergence.add(a.reference[i], t, a.params);
      if (histogram) atomicAdd(&bins[Bins::bin_of(t)], 1ull);
    }
    merge_block(divergence, scratch);
    if (threadIdx.x == 0) a.run_out[chunk * a.run_count + task - 1] = divergence;
  }
  __syncthreads();
  if (!histogram) return;
  kernels::HistogramChunk* out = task == 0 ? &a.hist[chunk] : &a.run_hist_out[chunk * a.run_count + task - 1];
  for (int b = threadIdx.x; b < Bins::kBins; b += blockDim.x) out->counts[b] = static_cast<int64_t>(bins[b]);
}

bool probed_here(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

// Where `count` values of T start in one allocation of which `bytes` are taken so far (aligned for T).
template <class T>
size_t reserve(size_t& bytes, size_t count) {
  const size_t at = (bytes + alignof(T) - 1) / alignof(T) * alignof(T);
  bytes = at + count * sizeof(T);
  return at;
}

template <class T>
void copy_out(std::vector<T>& to, const std::byte* from, size_t count) {
  const T* first = reinterpret_cast<const T*>(from);
  to.assign(first, first + count);
}

}  // namespace

std::optional<ProbeChunks> CudaBackend::probe(const ProbeRequest& request) const {
  const Tensor& reference = *request.reference;
  if (request.fits.size() > kMaxFits || request.runs.size() > kMaxRuns || !probed_here(reference.dtype()))
    return std::nullopt;
  for (const Tensor* run : request.runs)
    if (!probed_here(run->dtype()) || run->numel() != reference.numel()) return std::nullopt;
  activate();
  ProbeArgs a{};
  a.reference = {reference.device_raw(device()), reference.dtype()};
  a.run_count = static_cast<int>(request.runs.size());
  for (int j = 0; j < a.run_count; ++j) {
    a.runs[j] = {request.runs[size_t(j)]->device_raw(device()), request.runs[size_t(j)]->dtype()};
    a.run_histograms[j] = size_t(j) < request.run_histograms.size() && request.run_histograms[size_t(j)];
  }
  a.fit_count = static_cast<int>(request.fits.size());
  for (int f = 0; f < a.fit_count; ++f) a.fits[f] = request.fits[size_t(f)];
  a.reference_figures = request.reference_figures;
  a.params = request.params;
  a.n = reference.numel();
  a.chunk = request.chunk;
  const size_t chunks = static_cast<size_t>((a.n + a.chunk - 1) / a.chunk);
  const size_t ranges = a.reference_figures ? chunks : 0, fits = chunks * size_t(a.fit_count),
               runs = chunks * size_t(a.run_count);
  bool any_run_histogram = false;
  for (int j = 0; j < a.run_count; ++j) any_run_histogram = any_run_histogram || a.run_histograms[j];
  const size_t run_hists = any_run_histogram ? runs : 0;
  size_t bytes = 0;
  const size_t range_at = reserve<kernels::RangeChunk>(bytes, ranges),
               hist_at = reserve<kernels::HistogramChunk>(bytes, ranges),
               fit_at = reserve<kernels::FitChunk>(bytes, fits),
               run_at = reserve<kernels::DivergenceChunk>(bytes, runs),
               run_hist_at = reserve<kernels::HistogramChunk>(bytes, run_hists);
  ProbeChunks out;
  if (chunks == 0) return out;
  const std::shared_ptr<std::byte[]> buffer = allocate(bytes);
  a.range = reinterpret_cast<kernels::RangeChunk*>(buffer.get() + range_at);
  a.hist = reinterpret_cast<kernels::HistogramChunk*>(buffer.get() + hist_at);
  a.fit_out = reinterpret_cast<kernels::FitChunk*>(buffer.get() + fit_at);
  a.run_out = reinterpret_cast<kernels::DivergenceChunk*>(buffer.get() + run_at);
  a.run_hist_out = reinterpret_cast<kernels::HistogramChunk*>(buffer.get() + run_hist_at);
  if (run_hists)
    check(cudaMemsetAsync(a.run_hist_out, 0, run_hists * sizeof(kernels::HistogramChunk), stream()), "probe");
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(1 + a.run_count));
  probe_chunks<<<grid, kProbeThreads, 0, stream()>>>(a);
  check(cudaGetLastError(), "probe kernel launch");
  // The chunks come back in one copy through pinned memory.
  std::byte* host = staging(bytes);
  check(cudaMemcpyAsync(host, buffer.get(), bytes, cudaMemcpyDeviceToHost, stream()), "probe");
  check(cudaStreamSynchronize(stream()), "probe");
  copy_out(out.range, host + range_at, ranges);
  copy_out(out.hist, host + hist_at, ranges);
  copy_out(out.fits, host + fit_at, fits);
  copy_out(out.runs, host + run_at, runs);
  copy_out(out.run_hists, host + run_hist_at, run_hists);
  out.run_hists.resize(runs);  // zeros where no histogram was asked
  return out;
}

}  // namespace mpa::cuda
