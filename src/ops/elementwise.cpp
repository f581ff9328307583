#include "ops/elementwise.h"

namespace mpa {

Shape broadcast_output_shape(const Node& node, const std::vector<Shape>& shapes) {
  try {
    return broadcast_shapes(shapes);
  } catch (const Error& e) {
    fail(node.label() + ": " + e.what());
  }
}

std::optional<OperandSpread> operand_spread(const Shape& other, const Shape& shape) {
  if (other == shape) return OperandSpread::PerPlace;
  if (other.size() > shape.size()) return std::nullopt;
  const size_t lead = shape.size() - other.size();
  bool per_channel = false;
  for (size_t d = 0; d < other.size(); ++d) {
    if (other[d] == 1) continue;
    if (d + lead != 1 || other[d] != shape[1]) return std::nullopt;
    per_channel = true;
  }
  return per_channel ? OperandSpread::PerChannel : OperandSpread::One;
}

LegacyBroadcast::LegacyBroadcast(const OpInit& init) {
  if (init.opset() >= 7) return;
  axis_aligned_ = init.get_int("broadcast", 0) != 0 && init.has("axis");
  axis_ = init.get_int("axis", 0);
}

Shape LegacyBroadcast::rhs_shape(const Node& node, const Shape& a, const Shape& b) const {
  if (!axis_aligned_) return b;
  const int64_t rank = static_cast<int64_t>(a.size());
  const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  const int64_t trailing = rank - axis - static_cast<int64_t>(b.size());
  if (!(axis >= 0 && trailing >= 0))
    fail(node.label() + ": legacy broadcast of shape " + shape_str(b) + " onto " + shape_str(a) + " at axis " +
         std::to_string(axis_) + " is out of range");
  Shape out = b;
  out.insert(out.end(), static_cast<size_t>(trailing), 1);
  return out;
}

void require_nonzero_divisor(const Node& node, const Tensor& divisor) {
  visit_dtype(divisor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const T* d = divisor.data<T>();
      bool zero = false;
      for (int64_t i = 0, n = divisor.numel(); i < n; ++i) zero |= d[i] == T(0);
      if (!(!zero)) fail(node.label() + ": integer division by zero");
    }
  });
}

}  // namespace mpa
