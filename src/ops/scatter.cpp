// ScatterND, ScatterElements and the older Scatter: output = copy of data, then every update slice is
// written (or reduced with add/mul/max/min) at its validated offset, in index order.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ops/copy_strided.h"
#include "ops/indexing.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

enum class Reduction { None, Add, Mul, Max, Min };

Reduction parse_reduction(const OpInit& init) {
  const std::string r = init.get_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max" && init.opset() >= 18) return Reduction::Max;
  if (r == "min" && init.opset() >= 18) return Reduction::Min;
  fail(init.node().label() + ": reduction '" + r + "' is not supported at opset " + std::to_string(init.opset()));
}

// a (op) b. Integers wrap instead of overflowing; bool add/mul/max/min are or/and/or/and.
template <class T>
T reduce(Reduction op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (op == Reduction::Add || op == Reduction::Max) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
    switch (op) {
      case Reduction::Add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Reduction::Mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Reduction::Max: return std::max(a, b);
      case Reduction::Min: return std::min(a, b);
      default: return b;
    }
  } else {
    const compute_t<T> x = load(a), y = load(b);
    switch (op) {
      case Reduction::Add: return store<T>(x + y);
      case Reduction::Mul: return store<T>(x * y);
      case Reduction::Max: return store<T>(std::max(x, y));
      case Reduction::Min: return store<T>(std::min(x, y));
      default: return b;
    }
  }
}

// out = data; then out[offsets[j] + k] (op)= updates[j*slice + k].
void scatter(KernelContext& ctx, const Tensor& data, const Tensor& updates, const std::vector<int64_t>& offsets,
             int64_t slice, Reduction op) {
  if (updates.dtype() != data.dtype())
    fail(ctx.node().label() + ": updates have type " + dtype_name(updates.dtype()) + " but data has " +
         dtype_name(data.dtype()));
  Tensor& out = allocate_checked(ctx, 0, data.dtype(), data.shape());
  if (out.nbytes() > 0) std::memcpy(out.raw(), data.raw(), out.nbytes());
  const size_t bytes = static_cast<size_t>(slice) * dtype_size(data.dtype());
  if (op == Reduction::None) {
    for (size_t j = 0; j < offsets.size(); ++j)
      std::memcpy(element_ptr(out, offsets[j]), element_ptr(updates, static_cast<int64_t>(j) * slice), bytes);
    return;
  }
  visit_dtype(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const T* u = updates.data<T>();
    for (size_t j = 0; j < offsets.size(); ++j)
      for (int64_t k = 0; k < slice; ++k) {
        T& dst = o[offsets[j] + k];
        dst = reduce<T>(op, dst, u[static_cast<int64_t>(j) * slice + k]);
      }
  });
}

}  // namespace

class ScatterNDOp : public OpKernel {
 public:
  explicit ScatterNDOp(const OpInit& init) : reduction_(parse_reduction(init)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    int64_t slice = 0;
    const std::vector<int64_t> offsets = nd_offsets(ctx.node(), indices, data.shape(), 0, &slice);
    const Shape& is = indices.shape();
    Shape expected(is.begin(), is.end() - 1);
    expected.insert(expected.end(), data.shape().begin() + is.back(), data.shape().end());
    if (updates.shape() != expected)
      fail(ctx.node().label() + ": updates have shape " + shape_str(updates.shape()) + ", expected " +
           shape_str(expected));
    scatter(ctx, data, updates, offsets, slice, reduction_);
  }

 private:
  Reduction reduction_;
};
MPA_OP_TRAITS("", "ScatterND", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "ScatterND", ScatterNDOp, 11, 13, 16, 18);

// ScatterElements (and Scatter, its deprecated name without reduction).
class ScatterElementsOp : public OpKernel {
 public:
  explicit ScatterElementsOp(const OpInit& init) : axis_(init.get_int("axis", 0)), reduction_(parse_reduction(init)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    const int64_t axis = normalize_axis(ctx.node(), axis_, data.rank());
    if (updates.shape() != indices.shape())
      fail(ctx.node().label() + ": updates " + shape_str(updates.shape()) + " and indices " +
           shape_str(indices.shape()) + " must have the same shape");
    scatter(ctx, data, updates, element_offsets(ctx.node(), indices, data.shape(), axis), 1, reduction_);
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};
MPA_OP_TRAITS("", "ScatterElements", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "ScatterElements", ScatterElementsOp, 11, 13, 16, 18);
MPA_OP_TRAITS("", "Scatter", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Scatter", ScatterElementsOp, 9, 11);

}  // namespace mpa
