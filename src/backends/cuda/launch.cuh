// Grid-stride launching for the CUDA backend's kernels. Every kernel body is a __device__ function of an
// element index, run by one launcher whose grid depends on the element count only, so the same inputs
// give the same launch (and the same bits) on every run. Index math for broadcasting and strided copies
// is plain arithmetic on a small POD passed by value.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/cuda_backend.h"
#include "tensor/tensor.h"

namespace mpa::cuda {

inline constexpr int kThreads = 256;
inline constexpr int64_t kMaxBlocks = 4096;

template <class Body>
__global__ void grid_stride(int64_t n, Body body) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) body(i);
}

// Runs body(i) for i in [0, n) on the running backend's stream.
template <class Body>
void for_each_index(int64_t n, Body body) {
  if (n <= 0) return;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  grid_stride<<<static_cast<unsigned>(blocks), kThreads, 0, running().stream()>>>(n, body);
  check(cudaGetLastError(), "kernel launch");
}

inline constexpr int kMaxRank = 8;

// Where output element i of a broadcast (or strided) walk reads each of up to three inputs: per output
// dim, each input's element stride (0 where it broadcasts).
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};

  __device__ void offsets(int64_t i, int64_t* off, int inputs) const {
    for (int k = 0; k < inputs; ++k) off[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t coord = i % dims[d];
      i /= dims[d];
      for (int k = 0; k < inputs; ++k) off[k] += coord * strides[k][d];
    }
  }
};

// The walk of `out` over `inputs` (numpy broadcasting; shapes already checked). Fails beyond kMaxRank dims.
BroadcastIndex broadcast_index(const Shape& out, const std::vector<Shape>& inputs);

}  // namespace mpa::cuda
