// Pad's attributes and geometry, shared by the CPU and CUDA kernels: constant / reflect / edge / wrap (wrap
// since opset 19); pads (and the constant value) are attributes before opset 11 (`paddings` in opset 1) and
// host inputs since; opset 18 adds the axes input. Negative pads crop.
#pragma once
#include <cstddef>
#include <vector>

#include "ops/op.h"
#include "tensor/hd.h"

namespace mpa {

enum class PadMode { Constant, Reflect, Edge, Wrap };

// Source index of output coordinate o along a dim of size d with `begin` pad (d > 0), in the modes that
// read every output element from the input.
MPA_HD int64_t pad_source_index(PadMode mode, int64_t o, int64_t begin, int64_t d) {
  int64_t x = o - begin;
  if (x >= 0 && x < d) return x;
  switch (mode) {
    case PadMode::Edge: return x < 0 ? 0 : d - 1;
    case PadMode::Wrap: return ((x % d) + d) % d;
    default: {  // reflect, numpy style: periodic with period 2(d-1)
      if (d == 1) return 0;
      const int64_t period = 2 * (d - 1);
      x = ((x % period) + period) % period;
      return x < d ? x : period - x;
    }
  }
}

struct PadGeometry {
  std::vector<int64_t> begin;  // per dim: elements added before (negative: cropped)
  Shape out_shape;
};

// Constant mode copies the input's kept box: `box` elements from src_offset of the input to dst_offset of
// the output (element offsets; a negative begin crops the source, a positive one shifts the destination).
struct PadBox {
  Shape box;
  int64_t src_offset = 0, dst_offset = 0;
};
PadBox pad_kept_box(const Shape& in, const Shape& out, const std::vector<int64_t>& begin);

class PadAttrs {
 public:
  explicit PadAttrs(const OpInit& init);
  PadMode mode() const { return mode_; }
  // Fails naming the node on pads of the wrong length or giving a negative size.
  PadGeometry geometry(const KernelContext& ctx) const;
  // The constant mode's fill value as one element of `in`'s type (the constant_value input, or the
  // attribute converted to the type).
  std::vector<std::byte> fill_value(const KernelContext& ctx, const Tensor& in) const;

 private:
  int64_t opset_;
  PadMode mode_ = PadMode::Constant;
  std::vector<int64_t> pads_attr_;
  float value_attr_;
};

}  // namespace mpa
