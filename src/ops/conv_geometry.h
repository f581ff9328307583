// Sliding-window geometry shared by Conv, ConvTranspose and the pools: attributes read once, output sizes,
// explicit/auto padding, ceil mode, and validation with one-line messages naming the node.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/op.h"

namespace mpa {

struct WindowAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, strides, dilations, pads;  // empty = default / inferred
  std::vector<int64_t> output_padding, output_shape;            // ConvTranspose only
  bool ceil_mode = false;

  static WindowAttrs read(const OpInit& init);
};

// Per spatial dimension; pad_begin/pad_end are the effective paddings after auto_pad.
struct WindowGeometry {
  std::vector<int64_t> in, kernel, stride, dilation, pad_begin, pad_end, out;
  size_t rank() const { return in.size(); }
  int64_t in_size() const { return product(in); }
  int64_t out_size() const { return product(out); }
  int64_t kernel_size() const { return product(kernel); }
  int64_t effective_kernel(size_t d) const { return (kernel[d] - 1) * dilation[d] + 1; }
  static int64_t product(const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
  }
  // A 1-D geometry as the same windows over a 2-D input of height 1, so 2-D kernels serve it.
  WindowGeometry as_2d() const {
    auto lead = [](std::vector<int64_t> v, int64_t first) {
      v.insert(v.begin(), first);
      return v;
    };
    return {lead(in, 1),        lead(kernel, 1),  lead(stride, 1), lead(dilation, 1),
            lead(pad_begin, 0), lead(pad_end, 0), lead(out, 1)};
  }
};

// Forward windows (Conv, pools): in_spatial and kernel are the spatial dims of input and kernel.
WindowGeometry window_geometry(const std::string& label, const WindowAttrs& attrs, const Shape& in_spatial,
                               const Shape& kernel);

// Transposed windows (ConvTranspose): `out` is the ConvTranspose output size, `in` its input size.
WindowGeometry transposed_geometry(const std::string& label, const WindowAttrs& attrs, const Shape& in_spatial,
                                   const Shape& kernel);

// ConvTranspose's attributes: its windows' and the group count.
struct TransposedConvAttrs {
  WindowAttrs window;
  int64_t group = 1;
  static TransposedConvAttrs read(const OpInit& init) { return {WindowAttrs::read(init), init.get_int("group", 1)}; }
};

// ConvTranspose's X [N, C, in...], W [C, M / group, kernel...] and optional B [M], checked, with its geometry
// and output shape [N, M, out...]: what every backend's kernel starts from.
struct TransposedConv {
  WindowGeometry g;
  Shape out_shape;
  int64_t group_channels = 0, group_outputs = 0;  // C / group, M / group
};
TransposedConv transposed_conv(const std::string& label, const TransposedConvAttrs& attrs, const Tensor& x,
                               const Tensor& w, const Tensor* b);

// Walks the rows of a window mapping for one kernel offset. Positions p of the `from` grid map to
// q = p * stride + offset in the `to` grid (offset = kernel index * dilation - pad_begin, per dim). The
// walk visits `from` row by row (all dims but the last fixed) and calls
//   f(from_row, to_row, lo, hi, inner_offset)
// where from_row is the flat index of the row's first element, to_row the flat index of the row start
// in `to` (-1 when the fixed dims fall outside `to`), and p_last in [lo, hi) are the positions whose
// target to_row + p_last * stride_last + inner_offset lies inside `to`.
// Rows [row_begin, row_end) of `from` only (row_end < 0: to the last), with from_row counted from
// row_begin: a band of output rows, for im2col in bands.
template <class F>
void for_each_window_row(size_t nd, const int64_t* from, const int64_t* to, const int64_t* stride,
                         const int64_t* offset, F&& f, int64_t row_begin = 0, int64_t row_end = -1) {
  const size_t last = nd - 1;
  const int64_t s = stride[last], off = offset[last], n_from = from[last], n_to = to[last];
  // Valid p: 0 <= p*s + off < n_to.
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t hi = n_to - 1 - off < 0 ? 0 : (n_to - 1 - off) / s + 1;
  hi = std::min(hi, n_from);
  lo = std::min(lo, hi);
  int64_t rows = 1;
  for (size_t d = 0; d < last; ++d) rows *= from[d];
  if (row_end < 0) row_end = rows;
  int64_t idx[8] = {0};  // odometer over the fixed dims (Conv supports up to 8 spatial dims)
  for (int64_t d = static_cast<int64_t>(last) - 1, rest = row_begin; d >= 0; --d) {
    idx[d] = rest % from[d];
    rest /= from[d];
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    int64_t to_row = 0;
    bool inside = true;
    for (size_t d = 0; d < last; ++d) {
      const int64_t q = idx[d] * stride[d] + offset[d];
      inside = inside && q >= 0 && q < to[d];
      to_row = to_row * to[d] + q;
    }
    f((r - row_begin) * n_from, inside ? to_row * n_to : int64_t{-1}, lo, hi, off);
    for (size_t d = last; d-- > 0;) {
      if (++idx[d] < from[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace mpa
