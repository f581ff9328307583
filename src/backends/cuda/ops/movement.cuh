// Element-size-generic data movement on the device, shared by the CUDA data-movement ops (layout.cu,
// pad.cu): the device side of ops/copy_strided.h.
#pragma once
#include <vector>

#include "backends/cuda/launch.cuh"
#include "ops/copy_strided.h"

namespace mpa::cuda {

// An n-d box copy, as the CPU's copy_strided (ops/copy_strided.h): element i of `shape` (row-major) goes
// from src + sum(i_d * src_strides[d]) to dst + sum(i_d * dst_strides[d]); strides may be 0 or negative.
struct StridedBox {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, src[kMaxRank] = {}, dst[kMaxRank] = {};
};

template <class U>
void copy_box(U* dst, const U* src, int64_t n, StridedBox box) {
  for_each_index(n, [=] __device__(int64_t i) {
    int64_t s = 0, d = 0;
    for (int k = box.rank - 1; k >= 0; --k) {
      const int64_t c = i % box.dims[k];
      i /= box.dims[k];
      s += c * box.src[k];
      d += c * box.dst[k];
    }
    dst[d] = src[s];
  });
}

inline void copy_strided_on_device(std::byte* dst, const std::vector<int64_t>& dst_strides, const std::byte* src,
                                   const std::vector<int64_t>& src_strides, const Shape& shape, size_t elem_size) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  if (shape.size() > static_cast<size_t>(kMaxRank)) fail("cuda: data movement over more than 8 dims");
  StridedBox box;
  box.rank = static_cast<int>(shape.size());
  for (size_t k = 0; k < shape.size(); ++k)
    box.dims[k] = shape[k], box.src[k] = src_strides[k], box.dst[k] = dst_strides[k];
  visit_elem_bytes(elem_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    copy_box(reinterpret_cast<U*>(dst), reinterpret_cast<const U*>(src), n, box);
  });
}

inline std::byte* bytes_of(Tensor& t) { return static_cast<std::byte*>(t.device_raw(running().device())); }
inline const std::byte* bytes_of(const Tensor& t) {
  return static_cast<const std::byte*>(t.device_raw(running().device()));
}

}  // namespace mpa::cuda
