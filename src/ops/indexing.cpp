#include "ops/indexing.h"

#include <cstring>

#include "common/parallel.h"
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

std::vector<int64_t> element_offsets(const Node& node, const Tensor& indices, const Shape& data_shape, int64_t axis) {
  const Shape& is = indices.shape();
  if (is.size() != data_shape.size())
    fail(node.label() + ": indices " + shape_str(is) + " must have the rank of data " + shape_str(data_shape));
  for (size_t d = 0; d < is.size(); ++d)
    if (static_cast<int64_t>(d) != axis && is[d] > data_shape[d])
      fail(node.label() + ": indices " + shape_str(is) + " exceed data " + shape_str(data_shape) + " on axis " +
           std::to_string(d));
  const std::vector<int64_t> values = index_values(node, indices);
  const std::vector<int64_t> strides = contiguous_strides(data_shape);
  const size_t rank = is.size(), a = static_cast<size_t>(axis);
  std::vector<int64_t> offsets(values.size());
  std::vector<int64_t> pos(rank, 0);
  int64_t base = 0;  // offset of pos without its axis coordinate
  for (size_t i = 0; i < values.size(); ++i) {
    offsets[i] = base + checked_index(node, values[i], data_shape[a], "index") * strides[a];
    for (size_t d = rank; d-- > 0;) {
      if (d != a) base += strides[d];
      if (++pos[d] < is[d]) break;
      if (d != a) base -= strides[d] * is[d];
      pos[d] = 0;
    }
  }
  return offsets;
}

std::vector<int64_t> nd_offsets(const Node& node, const Tensor& indices, const Shape& data_shape, int64_t batch_dims,
                                int64_t* slice) {
  const Shape& is = indices.shape();
  const int64_t q = static_cast<int64_t>(is.size()), r = static_cast<int64_t>(data_shape.size()), b = batch_dims;
  if (q < 1) fail(node.label() + ": indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    fail(node.label() + ": batch_dims " + std::to_string(b) + " must be below the ranks of data (" + std::to_string(r) +
         ") and indices (" + std::to_string(q) + ")");
  const int64_t m = is.back();
  if (m < 0 || m > r - b)
    fail(node.label() + ": index tuples of length " + std::to_string(m) + " do not fit data " + shape_str(data_shape) +
         " with batch_dims " + std::to_string(b));
  for (int64_t d = 0; d < b; ++d)
    if (is[static_cast<size_t>(d)] != data_shape[static_cast<size_t>(d)])
      fail(node.label() + ": batch dim " + std::to_string(d) + " differs between indices " + shape_str(is) + " and data " +
           shape_str(data_shape));
  const std::vector<int64_t> strides = contiguous_strides(data_shape);
  const int64_t batch_stride = shape_numel(Shape(data_shape.begin() + b, data_shape.end()));
  *slice = shape_numel(Shape(data_shape.begin() + b + m, data_shape.end()));
  const int64_t batches = shape_numel(Shape(is.begin(), is.begin() + b));
  const int64_t per_batch = shape_numel(Shape(is.begin() + b, is.end() - 1));
  const std::vector<int64_t> values = index_values(node, indices);
  std::vector<int64_t> offsets(static_cast<size_t>(batches * per_batch));
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < per_batch; ++t) {
      const int64_t j = bi * per_batch + t;
      int64_t off = bi * batch_stride;
      for (int64_t k = 0; k < m; ++k) {
        const size_t d = static_cast<size_t>(b + k);
        off += checked_index(node, values[static_cast<size_t>(j * m + k)], data_shape[d], "index") * strides[d];
      }
      offsets[static_cast<size_t>(j)] = off;
    }
  return offsets;
}

void gather_slices(Tensor& out, const Tensor& data, const std::vector<int64_t>& offsets, int64_t slice) {
  const size_t bytes = static_cast<size_t>(slice) * dtype_size(data.dtype());
  if (bytes == 0) return;
  parallel_for(static_cast<int64_t>(offsets.size()), std::max<int64_t>(1, 16384 / slice), [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j)
      std::memcpy(element_ptr(out, j * slice), element_ptr(data, offsets[static_cast<size_t>(j)]), bytes);
  });
}

}  // namespace mpa
