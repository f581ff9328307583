// ConvTranspose's column step on CUDA (ops/conv_transpose.cu launches it): the GEMM that makes one image and
// group's columns, col = W_gᵀ·X_g, and the gather that adds each output element's columns in the CPU's col2im
// order. Host and device code without CUDA runtime calls, so that the host's tests run them through the CPU's
// GEMM and hold them against the CPU's op (tests/backend/test_cuda_kernels_on_host.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "backends/cuda/ops/gemm_call.h"
#include "common/error.h"
#include "ops/conv_geometry.h"
#include "tensor/hd.h"

namespace mpa::cuda {

inline constexpr int kMaxWindowRank = 8;

// The transposed windows by value, for the device: output position o of channel m takes col[m, k, i] for every
// kernel offset k whose window from input position i covers o.
struct Col2im {
  int rank = 0;
  int64_t in[kMaxWindowRank] = {}, out[kMaxWindowRank] = {}, kernel[kMaxWindowRank] = {}, stride[kMaxWindowRank] = {},
          dilation[kMaxWindowRank] = {}, pad_begin[kMaxWindowRank] = {};
  int64_t kernel_size = 1, in_size = 1, out_size = 1;

  explicit Col2im(const WindowGeometry& g) : rank(static_cast<int>(g.rank())) {
    if (g.rank() > static_cast<size_t>(kMaxWindowRank))
      fail("ConvTranspose with " + std::to_string(g.rank()) + " spatial dims has no CUDA kernel (at most " +
           std::to_string(kMaxWindowRank) + ")");
    for (size_t d = 0; d < g.rank(); ++d) {
      in[d] = g.in[d], out[d] = g.out[d], kernel[d] = g.kernel[d], stride[d] = g.stride[d];
      dilation[d] = g.dilation[d], pad_begin[d] = g.pad_begin[d];
    }
    kernel_size = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  }

  // y[m, o] += col[m, k, i] over k in order, for one (image, group) slice of `channels` output channels.
  template <class T>
  MPA_HD void add(const T* col, T* y, int64_t index) const {
    const int64_t m = index / out_size, o = index % out_size;
    int64_t position[kMaxWindowRank];
    for (int64_t rest = o, d = rank - 1; d >= 0; --d) position[d] = rest % out[d], rest /= out[d];
    T sum = y[index];
    for (int64_t k = 0; k < kernel_size; ++k) {
      int64_t source = 0;
      bool lands = true;
      for (int64_t rest = k, d = rank - 1, scale = 1; d >= 0 && lands; --d) {
        const int64_t offset = (rest % kernel[d]) * dilation[d] - pad_begin[d], reach = position[d] - offset;
        rest /= kernel[d];
        lands = reach >= 0 && reach % stride[d] == 0 && reach / stride[d] < in[d];
        source += reach / stride[d] * scale;
        scale *= in[d];
      }
      if (lands) sum += col[(m * kernel_size + k) * in_size + source];
    }
    y[index] = sum;
  }
};

// col [M/group x kernel, in] = W_gᵀ·X_g for image n and group gi (W: [C, M/group, kernel...], X: [N, C, in...]).
inline GemmCall columns_call(const TransposedConv& shape, const Col2im& windows, int64_t channels, int64_t n,
                             int64_t gi) {
  const int64_t cg = shape.group_channels, mg = shape.group_outputs;
  GemmCall call;
  call.trans_a = true;
  call.M = mg * windows.kernel_size;
  call.N = windows.in_size;
  call.K = cg;
  call.lda = mg * windows.kernel_size;
  call.ldb = call.ldc = windows.in_size;
  call.a_offsets = {gi * cg * mg * windows.kernel_size};
  call.b_offsets = {(n * channels + gi * cg) * windows.in_size};
  return call;
}

}  // namespace mpa::cuda
