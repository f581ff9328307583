// Resize and Upsample's attributes and plan, shared by the CPU and CUDA kernels: separable, one pass per
// resized axis, each pass given by its taps (input indices and weights per output index), as the ONNX
// reference computes them.
#pragma once
#include <string>
#include <vector>

#include "ops/op.h"

namespace mpa {

enum class ResizeMode { Nearest, Linear, Cubic };

struct AxisTaps {
  int64_t n = 0;                     // taps per output index
  std::vector<int64_t> index;        // out * n input indices (clamped into range)
  std::vector<double> weight;        // out * n weights
  std::vector<uint8_t> extrapolate;  // per output index (tf_crop_and_resize outside the input)
};

struct ResizeSettings {
  ResizeMode mode = ResizeMode::Nearest;
  std::string coordinate_mode = "half_pixel", nearest_mode = "round_prefer_floor", keep_aspect = "stretch";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

// One pass: src [outer, in, inner] -> dst [outer, out, inner] along `taps`.
struct ResizePass {
  int64_t outer = 1, in = 0, out = 0, inner = 1;
  AxisTaps taps;
};

struct ResizePlan {
  Shape out_shape;
  std::vector<ResizePass> passes;  // in axis order, each on the previous one's result
};

class ResizeAttrs {
 public:
  ResizeAttrs(const OpInit& init, bool upsample);
  const ResizeSettings& settings() const { return s_; }
  // The output shape and passes for the node's inputs (scales/sizes/roi as host inputs); fails naming the node.
  ResizePlan plan(const KernelContext& ctx) const;

 private:
  bool upsample_;
  int64_t opset_;
  ResizeSettings s_;
  std::vector<int64_t> axes_;
  std::vector<float> attr_scales_;
};

}  // namespace mpa
