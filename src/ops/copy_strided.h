// Element-type agnostic data movement, written once and shared by the shape ops (Transpose, Slice,
// Concat, Split, Tile, Expand, Pad, DepthToSpace, ...): they only move elements of a known byte size,
// so every copy here works on raw storage and dispatches on the element size (1, 2, 4 or 8 bytes).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "tensor/tensor.h"

namespace mpa {

// Calls f(TypeTag<U>{}) with U an unsigned integer of the given byte size (a stand-in for any element).
template <class F> decltype(auto) visit_elem_bytes(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: fail("element size " + std::to_string(elem_size) + " is not supported by data-movement ops");
  }
}

// Row-major strides (in elements) of a dense tensor of this shape.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Copies an n-d box: for every index i of shape, dst[sum i_d*dst_strides[d]] = src[sum i_d*src_strides[d]].
// Strides are in elements and may be zero (broadcast source) or negative (reversed source); dst and src
// point at the box's first element. Contiguous inner runs become memcpy; a transposed inner pair is
// copied in cache-sized tiles; large copies run in parallel.
void copy_strided(void* dst, const std::vector<int64_t>& dst_strides, const void* src,
                  const std::vector<int64_t>& src_strides, const Shape& shape, size_t elem_size);

// dst (dense, shape in_shape permuted by perm) = transpose of dense src of shape in_shape.
void permute_copy(void* dst, const void* src, size_t elem_size, const Shape& in_shape, const std::vector<int64_t>& perm);

// Writes count copies of the elem_size-byte value to dst.
void fill_elements(void* dst, int64_t count, const void* value, size_t elem_size);

// Byte pointer to element `offset` of a tensor.
inline std::byte* element_ptr(Tensor& t, int64_t offset) {
  return static_cast<std::byte*>(t.raw()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}
inline const std::byte* element_ptr(const Tensor& t, int64_t offset) {
  return static_cast<const std::byte*>(t.raw()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

}  // namespace mpa
