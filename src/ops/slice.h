// Slice's geometry, shared by the CPU and CUDA kernels: starts/ends/axes as attributes before opset 10, as
// inputs (plus steps) since, read on the host (OpTraits::host_inputs). Out-of-range starts/ends clamp as
// the spec says ([0, dim] forward; start to [0, dim-1] and end to [-1, dim-1] backward); negative steps walk
// backwards; a zero step is an error.
#pragma once
#include <vector>

#include "ops/op.h"

namespace mpa {

// The slice as a strided view of the input: out_shape elements read from src_offset with src_strides.
struct SliceView {
  Shape out_shape;
  int64_t src_offset = 0;
  std::vector<int64_t> src_strides;
  // Whether the slice is one contiguous run of the source (taken as a view, without a copy).
  bool contiguous() const {
    int64_t stride = 1;
    for (size_t d = out_shape.size(); d-- > 0;) {
      if (out_shape[d] != 1 && src_strides[d] != stride) return false;
      stride *= out_shape[d];
    }
    return true;
  }
};

class SliceAttrs {
 public:
  explicit SliceAttrs(const OpInit& init)
      : opset_(init.opset()),
        starts_attr_(init.get_ints("starts")),
        ends_attr_(init.get_ints("ends")),
        axes_attr_(init.get_ints("axes")) {}
  // The view of input 0 that the node's inputs (or attributes) select; fails naming the node.
  SliceView view(const KernelContext& ctx) const;

 private:
  int64_t opset_;
  std::vector<int64_t> starts_attr_, ends_attr_, axes_attr_;
};

}  // namespace mpa
