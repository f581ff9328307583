// Concat's geometry, shared by the CPU and CUDA kernels: every input of one element type and of input 0's
// shape except along the axis; checks fail naming the node.
#pragma once
#include "ops/op.h"

namespace mpa {

struct ConcatGeometry {
  int64_t axis = 0;
  Shape out_shape;
};
// `axis` as the node gives it (negative counts from the end).
ConcatGeometry concat_geometry(const KernelContext& ctx, int64_t axis);
// Copies the slab [offset, offset + part.shape[axis]) along `axis` between host tensors `whole` and a dense
// `part` (into `whole` when `into_whole`), as Concat, Split and the sequence ops joining or splitting tensors do.
void copy_slab(Tensor& dst, const Tensor& src, int64_t axis, int64_t offset, bool into_whole);

}  // namespace mpa
