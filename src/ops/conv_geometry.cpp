#include "ops/conv_geometry.h"

#include <algorithm>

namespace mpa {

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// Fills defaults and checks the per-dimension attributes against the spatial rank.
constexpr int64_t kMaxWindowAttribute = int64_t{1} << 31;

void common_checks(const std::string& label, const WindowAttrs& a, WindowGeometry& g, const Shape& in_spatial,
                   const Shape& kernel) {
  const size_t nd = in_spatial.size();
  if (!(nd >= 1 && nd <= 8)) fail(label + ": " + std::to_string(nd) + " spatial dimensions (1 to 8 supported)");
  if (!(kernel.size() == nd))
    fail(label + ": kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " + std::to_string(nd));
  if (!a.kernel_shape.empty())
    if (!(a.kernel_shape == std::vector<int64_t>(kernel.begin(), kernel.end())))
      fail(label + ": kernel_shape " + list_str(a.kernel_shape) + " does not match the weight's " +
           list_str(std::vector<int64_t>(kernel.begin(), kernel.end())));
  g.in.assign(in_spatial.begin(), in_spatial.end());
  g.kernel.assign(kernel.begin(), kernel.end());
  g.stride = a.strides.empty() ? std::vector<int64_t>(nd, 1) : a.strides;
  g.dilation = a.dilations.empty() ? std::vector<int64_t>(nd, 1) : a.dilations;
  if (!(g.stride.size() == nd))
    fail(label + ": strides " + list_str(g.stride) + " for " + std::to_string(nd) + " spatial dims");
  if (!(g.dilation.size() == nd))
    fail(label + ": dilations " + list_str(g.dilation) + " for " + std::to_string(nd) + " spatial dims");
  for (size_t d = 0; d < nd; ++d) {
    if (!(g.kernel[d] > 0)) fail(label + ": kernel dimension " + std::to_string(g.kernel[d]) + " must be positive");
    if (!(g.stride[d] > 0)) fail(label + ": stride " + std::to_string(g.stride[d]) + " must be positive");
    if (!(g.dilation[d] > 0)) fail(label + ": dilation " + std::to_string(g.dilation[d]) + " must be positive");
    // Bounded so that extents and padded sizes (kernel x dilation + pads + input) cannot wrap an int64.
    if (!(g.kernel[d] <= kMaxWindowAttribute && g.stride[d] <= kMaxWindowAttribute &&
          g.dilation[d] <= kMaxWindowAttribute))
      fail(label + ": kernel " + list_str(g.kernel) + ", strides " + list_str(g.stride) + " or dilations " +
           list_str(g.dilation) + " beyond 2^31");
  }
  g.pad_begin.assign(nd, 0);
  g.pad_end.assign(nd, 0);
  if (a.auto_pad == "NOTSET" || a.auto_pad.empty()) {
    if (!a.pads.empty()) {
      if (!(a.pads.size() == 2 * nd))
        fail(label + ": pads " + list_str(a.pads) + " needs " + std::to_string(2 * nd) + " values");
      for (size_t d = 0; d < nd; ++d) {
        g.pad_begin[d] = a.pads[d];
        g.pad_end[d] = a.pads[nd + d];
        if (!(g.pad_begin[d] >= 0 && g.pad_end[d] >= 0)) fail(label + ": negative pads " + list_str(a.pads));
        if (!(g.pad_begin[d] <= kMaxWindowAttribute && g.pad_end[d] <= kMaxWindowAttribute))
          fail(label + ": pads " + list_str(a.pads) + " beyond 2^31");
      }
    }
  } else {
    if (!(a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER" || a.auto_pad == "VALID"))
      fail(label + ": unknown auto_pad '" + a.auto_pad + "'");
  }
}

}  // namespace

WindowAttrs WindowAttrs::read(const OpInit& init) {
  WindowAttrs a;
  a.auto_pad = init.get_string("auto_pad", "NOTSET");
  a.kernel_shape = init.get_ints("kernel_shape");
  a.strides = init.get_ints("strides");
  a.dilations = init.get_ints("dilations");
  a.pads = init.get_ints("pads");
  a.output_padding = init.get_ints("output_padding");
  a.output_shape = init.get_ints("output_shape");
  a.ceil_mode = init.get_int("ceil_mode", 0) != 0;
  return a;
}

WindowGeometry window_geometry(const std::string& label, const WindowAttrs& a, const Shape& in_spatial,
                               const Shape& kernel) {
  WindowGeometry g;
  common_checks(label, a, g, in_spatial, kernel);
  const size_t nd = g.rank();
  g.out.assign(nd, 0);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t keff = g.effective_kernel(d), in = g.in[d], s = g.stride[d];
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      g.out[d] = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (g.out[d] - 1) * s + keff - in);
      g.pad_begin[d] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[d] = total - g.pad_begin[d];
      continue;
    }
    const int64_t span = in + g.pad_begin[d] + g.pad_end[d] - keff;
    if (!(span >= 0))
      fail(label + ": kernel extent " + std::to_string(keff) + " exceeds padded input " +
           std::to_string(in + g.pad_begin[d] + g.pad_end[d]) + " in spatial dim " + std::to_string(d));
    if (a.ceil_mode) {
      g.out[d] = (span + s - 1) / s + 1;
      if ((g.out[d] - 1) * s >= in + g.pad_begin[d]) --g.out[d];  // last window must start inside
    } else {
      g.out[d] = span / s + 1;
    }
  }
  return g;
}

WindowGeometry transposed_geometry(const std::string& label, const WindowAttrs& a, const Shape& in_spatial,
                                   const Shape& kernel) {
  WindowGeometry g;
  common_checks(label, a, g, in_spatial, kernel);
  const size_t nd = g.rank();
  std::vector<int64_t> out_pad = a.output_padding.empty() ? std::vector<int64_t>(nd, 0) : a.output_padding;
  if (!(out_pad.size() == nd))
    fail(label + ": output_padding " + list_str(out_pad) + " for " + std::to_string(nd) + " spatial dims");
  std::vector<int64_t> out_shape = a.output_shape;
  if (out_shape.size() == nd + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!(out_shape.empty() || out_shape.size() == nd))
    fail(label + ": output_shape " + list_str(a.output_shape) + " for " + std::to_string(nd) + " spatial dims");
  g.out.assign(nd, 0);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t keff = g.effective_kernel(d), in = g.in[d], s = g.stride[d];
    if (!(out_pad[d] >= 0)) fail(label + ": negative output_padding " + list_str(out_pad));
    const int64_t full = s * (in - 1) + out_pad[d] + keff;  // output size with no padding
    const bool same = a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER";
    if (same) {
      // As the ONNX reference: the output is output_shape (or in * stride) and the padding (negative when
      // the output is larger than the full result) is split with floor division.
      g.out[d] = !out_shape.empty() ? out_shape[d] : in * s;
      const int64_t total = full - g.out[d];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      g.pad_begin[d] = a.auto_pad == "SAME_UPPER" ? half : total - half;
      g.pad_end[d] = total - g.pad_begin[d];
    } else {
      if (a.auto_pad == "VALID") g.pad_begin[d] = g.pad_end[d] = 0;
      // An explicit output_shape crops or extends the result (extension holds only the bias).
      g.out[d] = !out_shape.empty() ? out_shape[d] : full - g.pad_begin[d] - g.pad_end[d];
      if (!out_shape.empty()) g.pad_end[d] = full - g.pad_begin[d] - g.out[d];
    }
    if (!(g.out[d] > 0))
      fail(label + ": no output left in spatial dim " + std::to_string(d) + " (full size " + std::to_string(full) +
           ", pads " + list_str(a.pads) + ")");
  }
  return g;
}

TransposedConv transposed_conv(const std::string& label, const TransposedConvAttrs& attrs, const Tensor& x,
                               const Tensor& w, const Tensor* b) {
  const int64_t group = attrs.group;
  if (!(x.rank() >= 3)) fail(label + ": input X has shape " + shape_str(x.shape()) + ", needs N x C x spatial");
  if (!(w.rank() == x.rank()))
    fail(label + ": weight W has shape " + shape_str(w.shape()) + ", input X " + shape_str(x.shape()));
  if (!(w.dtype() == x.dtype() && (!b || b->dtype() == x.dtype()))) fail(label + ": inputs differ in element type");
  if (!(group > 0)) fail(label + ": group " + std::to_string(group) + " must be positive");
  const int64_t channels = x.dim(1);
  if (!(w.dim(0) == channels))
    fail(label + ": input has " + std::to_string(channels) + " channels, W has " + std::to_string(w.dim(0)));
  if (!(channels % group == 0))
    fail(label + ": " + std::to_string(channels) + " input channels not divisible by group " + std::to_string(group));
  const int64_t out_channels = w.dim(1) * group;
  if (b)
    if (!(b->rank() == 1 && b->dim(0) == out_channels))
      fail(label + ": bias B has shape " + shape_str(b->shape()) + ", expected " + std::to_string(out_channels));
  const Shape in_spatial(x.shape().begin() + 2, x.shape().end());
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  TransposedConv t;
  t.g = transposed_geometry(label, attrs.window, in_spatial, kernel);
  t.out_shape = {x.dim(0), out_channels};
  t.out_shape.insert(t.out_shape.end(), t.g.out.begin(), t.g.out.end());
  t.group_channels = channels / group;
  t.group_outputs = w.dim(1);
  return t;
}

}  // namespace mpa
