// Unique (11): the distinct elements of the flattened input, or the distinct slices along `axis`, sorted
// ascending (slices lexicographically) or in order of first occurrence; with each one's first index, every
// input element's (slice's) position among them, and their counts. As numpy.unique: NaNs count as equal
// to each other and sort last, -0 equals 0.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

// An element as compared: 16-bit floats widened, every other type as it is.
template <class T>
auto compare_key(T v) {
  if constexpr (std::is_same_v<T, Float16>)
    return half_to_float(v.bits);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bfloat16_to_float(v.bits);
  else
    return v;
}
template <class K>
bool is_nan_key(K v) {
  if constexpr (std::is_floating_point_v<K>)
    return std::isnan(v);
  else
    return false;
}
template <class K>
bool less_key(K a, K b) {
  return !is_nan_key(a) && (is_nan_key(b) || a < b);
}
template <class K>
bool equal_key(K a, K b) {
  return a == b || (is_nan_key(a) && is_nan_key(b));
}

class UniqueOp : public OpKernel {
 public:
  explicit UniqueOp(const OpInit& init)
      : has_axis_(init.has("axis")), axis_(init.get_int("axis", 0)), sorted_(init.get_int("sorted", 1) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    // Slices along the axis as rows: `count` rows of `width` elements, row r's element j at
    // (j / inner) * count * inner + r * inner + j % inner.
    const int64_t axis = has_axis_ ? normalize_axis(node, axis_, x.rank()) : 0;
    const int64_t count = has_axis_ ? x.dim(int(axis)) : x.numel();
    const int64_t inner = has_axis_ ? contiguous_strides(x.shape())[size_t(axis)] : 1;
    const int64_t width = count == 0 ? 0 : x.numel() / count;
    std::vector<int64_t> order(static_cast<size_t>(count)), first, inverse(static_cast<size_t>(count)), counts;
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* data = x.data<T>();
      const auto at = [&](int64_t r, int64_t j) {
        return compare_key(data[(j / inner) * count * inner + r * inner + j % inner]);
      };
      const auto row_less = [&](int64_t a, int64_t b) {
        for (int64_t j = 0; j < width; ++j) {
          const auto u = at(a, j), v = at(b, j);
          if (!equal_key(u, v)) return less_key(u, v);
        }
        return false;
      };
      const auto row_equal = [&](int64_t a, int64_t b) {
        for (int64_t j = 0; j < width; ++j)
          if (!equal_key(at(a, j), at(b, j))) return false;
        return true;
      };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), row_less);
      // Groups of equal rows in sorted order; the stable sort puts each group's first occurrence first.
      std::vector<int64_t> group_of(static_cast<size_t>(count));
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || !row_equal(order[i - 1], order[i])) {
          first.push_back(order[i]);
          counts.push_back(0);
        }
        group_of[size_t(order[i])] = int64_t(first.size()) - 1;
        ++counts.back();
      }
      // Unsorted: groups renumbered by first occurrence.
      std::vector<int64_t> rank(first.size());
      std::iota(rank.begin(), rank.end(), int64_t{0});
      if (!sorted_) {
        std::vector<int64_t> by_first(first.size());
        std::iota(by_first.begin(), by_first.end(), int64_t{0});
        std::sort(by_first.begin(), by_first.end(),
                  [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
        for (size_t k = 0; k < by_first.size(); ++k) rank[size_t(by_first[k])] = int64_t(k);
        std::vector<int64_t> first_ranked(first.size()), counts_ranked(first.size());
        for (size_t g = 0; g < first.size(); ++g) {
          first_ranked[size_t(rank[g])] = first[g];
          counts_ranked[size_t(rank[g])] = counts[g];
        }
        first.swap(first_ranked);
        counts.swap(counts_ranked);
      }
      for (int64_t r = 0; r < count; ++r) inverse[size_t(r)] = rank[size_t(group_of[size_t(r)])];
    });
    const int64_t unique = int64_t(first.size());
    Shape y_shape = has_axis_ ? x.shape() : Shape{unique};
    if (has_axis_) y_shape[size_t(axis)] = unique;
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), y_shape);
    // Row first[k] of x becomes row k of y: one copy of `inner` elements per outer index.
    const int64_t outer = width / std::max<int64_t>(inner, 1);
    const size_t elem = dtype_size(x.dtype());
    for (int64_t k = 0; k < unique; ++k)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(element_ptr(y, (o * unique + k) * inner), element_ptr(x, (o * count + first[size_t(k)]) * inner),
                    size_t(inner) * elem);
    const auto write = [&](size_t output, const std::vector<int64_t>& values) {
      if (ctx.num_outputs() > output && ctx.output_requested(output))
        std::copy(values.begin(), values.end(),
                  allocate_checked(ctx, output, DType::Int64, {int64_t(values.size())}).data<int64_t>());
    };
    write(1, first);
    write(2, inverse);
    write(3, counts);
  }

 private:
  bool has_axis_;
  int64_t axis_;
  bool sorted_;
};

}  // namespace

// Not rounding-commutative: values that differ may round to one, changing the output shape.
MPA_OP_TRAITS("", "Unique", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Unique", UniqueOp, 11);

}  // namespace mpa
