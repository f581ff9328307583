#include "ops/shape_helpers.h"

#include <algorithm>
#include <new>

namespace mpa {

int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    fail(node.label() + ": " + what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) +
         " (valid: " + std::to_string(-rank) + ".." + std::to_string(rank - 1) + ")");
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const Node& node, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(node, a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end())
      fail(node.label() + ": axis " + std::to_string(a) + " is listed more than once");
    out.push_back(n);
  }
  return out;
}

int64_t scalar_int(const Node& node, const Tensor& t, const char* what) {
  if (t.numel() != 1)
    fail(node.label() + ": " + what + " must hold exactly one value, got shape " + shape_str(t.shape()));
  if (dtype_is_float(t.dtype())) {
    const double v = t.to_double_vector()[0];
    if (!(v >= -9.2e18 && v <= 9.2e18)) fail(node.label() + ": " + what + " " + std::to_string(v) + " is not a valid integer");
    return static_cast<int64_t>(v);
  }
  return t.to_int64_vector()[0];
}

int64_t checked_numel(const Node& node, const Shape& shape) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) fail(node.label() + ": negative dimension " + std::to_string(d) + " in output shape " + shape_str(shape));
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (int64_t d : shape) {
    if (n > kLimit / d) fail(node.label() + ": output shape " + shape_str(shape) + " has too many elements");
    n *= d;
  }
  return n;
}

Tensor& allocate_checked(KernelContext& ctx, size_t i, DType dtype, const Shape& shape) {
  const int64_t n = checked_numel(ctx.node(), shape);
  const int64_t elem = static_cast<int64_t>(std::max<size_t>(dtype_size(dtype), 1));
  constexpr int64_t kMaxBytes = int64_t{1} << 48;  // 256 TiB: beyond any machine, and far from overflow
  if (n > kMaxBytes / elem)
    fail(ctx.node().label() + ": output shape " + shape_str(shape) + " (" + std::to_string(n) + " elements of " +
         dtype_name(dtype) + ") is too large to allocate");
  try {
    return ctx.allocate_output(i, dtype, shape);
  } catch (const std::bad_alloc&) {
    fail(ctx.node().label() + ": out of memory allocating output shape " + shape_str(shape) + " (" +
         std::to_string(n * elem) + " bytes)");
  }
}

void require_same_dtype(const KernelContext& ctx, size_t first, size_t last) {
  const DType t = ctx.input(first).dtype();
  for (size_t i = first + 1; i < last; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != t)
      fail(ctx.node().label() + ": input " + std::to_string(i) + " has type " + dtype_name(ctx.input(i).dtype()) +
           " but input " + std::to_string(first) + " has " + dtype_name(t));
}

int64_t checked_index(const Node& node, int64_t index, int64_t dim, const char* what) {
  if (index < -dim || index >= dim)
    fail(node.label() + ": " + what + " " + std::to_string(index) + " is out of range for a dimension of size " +
         std::to_string(dim));
  return index < 0 ? index + dim : index;
}

std::vector<int64_t> index_values(const Node& node, const Tensor& indices) {
  if (indices.dtype() != DType::Int64 && indices.dtype() != DType::Int32)
    fail(node.label() + ": indices must be int32 or int64, got " + dtype_name(indices.dtype()));
  return indices.to_int64_vector();
}

}  // namespace mpa
