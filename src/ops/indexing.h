// Index arithmetic shared by the gather and scatter ops: every index is validated (negatives wrap,
// out-of-range fails naming the node) and turned into element offsets, so the copy loops only move
// bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/op.h"

namespace mpa {

// GatherElements / ScatterElements: for every position p of `indices` (same rank as data, each dim at
// most data's), the dense offset into data_shape of p with its `axis` coordinate replaced by indices[p].
std::vector<int64_t> element_offsets(const Node& node, const Tensor& indices, const Shape& data_shape, int64_t axis);

// GatherND / ScatterND: the dense offsets into data_shape of the slices addressed by the index tuples
// along the last dim of `indices`, the first batch_dims dims shared by both. *slice gets the slice size
// in elements.
std::vector<int64_t> nd_offsets(const Node& node, const Tensor& indices, const Shape& data_shape, int64_t batch_dims,
                                int64_t* slice);

// out[j*slice .. (j+1)*slice) = data[offsets[j] .. offsets[j]+slice) for every j (out is dense).
void gather_slices(Tensor& out, const Tensor& data, const std::vector<int64_t>& offsets, int64_t slice);

}  // namespace mpa
