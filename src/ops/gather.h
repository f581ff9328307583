// Gather's geometry, shared by the CPU and CUDA kernels: data [outer, dim, inner] gathered along the axis at
// validated rows (negative indices counted from the end; out of range fails naming the node).
#pragma once
#include <vector>

#include "ops/op.h"

namespace mpa {

struct GatherGeometry {
  Shape out_shape;
  int64_t outer = 1, dim = 0, inner = 1;
  std::vector<int64_t> rows;  // per index, in [0, dim)
};
GatherGeometry gather_geometry(const Node& node, int64_t axis, const Tensor& data, const Tensor& indices);

}  // namespace mpa
