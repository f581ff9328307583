#include <algorithm>

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"
#include "ops/slice.h"

namespace mpa {

SliceView SliceAttrs::view(const KernelContext& ctx) const {
  const Node& node = ctx.node();
  const Tensor& in = ctx.input(0);
  const int64_t rank = in.rank();
  std::vector<int64_t> starts = starts_attr_, ends = ends_attr_, axes = axes_attr_, steps;
  if (opset_ >= 10) {
    starts = index_values(node, ctx.input(1));
    ends = index_values(node, ctx.input(2));
    axes = ctx.has_input(3) ? index_values(node, ctx.input(3)) : std::vector<int64_t>{};
    if (ctx.has_input(4)) steps = index_values(node, ctx.input(4));
  }
  if (ends.size() != starts.size())
    fail(node.label() + ": starts has " + std::to_string(starts.size()) + " values but ends has " +
         std::to_string(ends.size()));
  if (axes.empty() && !(opset_ >= 10 && ctx.has_input(3)))
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty() && !(opset_ >= 10 && ctx.has_input(4))) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    fail(node.label() + ": starts, ends, axes and steps must have the same length (" + std::to_string(starts.size()) +
         ", " + std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + ", " + std::to_string(steps.size()) +
         ")");
  axes = normalize_axes(node, axes, rank);

  const std::vector<int64_t> in_strides = contiguous_strides(in.shape());
  Shape out_shape = in.shape();
  std::vector<int64_t> src_strides = in_strides;
  int64_t src_offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    const int64_t dim = out_shape[a], step = steps[i];
    if (step == 0) fail(node.label() + ": step for axis " + std::to_string(a) + " is 0");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;  // cannot overflow: dim >= 0
    if (end < 0) end += dim;
    int64_t count = 0;
    if (dim == 0) {
      start = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start)
        count = static_cast<int64_t>((static_cast<uint64_t>(end - start) - 1) / static_cast<uint64_t>(step) + 1);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      const uint64_t magnitude = static_cast<uint64_t>(-(step + 1)) + 1;  // |step| without overflow
      if (start > end) count = static_cast<int64_t>((static_cast<uint64_t>(start - end) - 1) / magnitude + 1);
    }
    out_shape[a] = count;
    if (count > 0) src_offset += start * in_strides[a];
    src_strides[a] = count > 1 ? in_strides[a] * step : in_strides[a];  // |step| < dim when count > 1
  }
  return {out_shape, src_offset, src_strides};
}

}  // namespace mpa
