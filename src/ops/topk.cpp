// TopK: the k largest (or smallest) elements along an axis and their int64 indices.
// Versions: 1 (k attribute), 10 (K as a 1-element int64 input), 11 (largest, sorted, negative axis),
// 24 (more types). Order: by value, equal values by ascending index (the spec's stable order); NaN
// counts as larger than every number. Results are always sorted (allowed when sorted=0).
#include <algorithm>

#include "kernels/reduce.h"
#include "ops/compute_buffer.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

class TopKOp : public OpKernel {
 public:
  explicit TopKOp(const OpInit& init)
      : k_from_input_(init.opset() >= 10),
        k_attr_(init.get_int("k", -1)),
        axis_(init.get_int("axis", -1)),
        largest_(init.get_int("largest", 1) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    int64_t k = k_attr_;
    if (k_from_input_) {
      const Tensor& k_t = ctx.input(1);
      if (!(k_t.numel() == 1 && (k_t.dtype() == DType::Int64 || k_t.dtype() == DType::Int32)))
        fail(who + ": K must be a 1-element int64 tensor");
      k = k_t.to_int64_vector()[0];
    }
    const int64_t axis = normalize_axis(axis_, x.rank(), who);
    const AxisSplit s = split_at_axis(x.shape(), axis);
    if (!(k >= 0 && k <= s.n))
      fail(who + ": k = " + std::to_string(k) + " is out of range for an axis of size " + std::to_string(s.n));
    Shape out_shape = x.shape();
    out_shape[static_cast<size_t>(axis)] = k;
    Tensor& values = ctx.allocate_output(0, x.dtype(), out_shape);
    Tensor& indices = ctx.allocate_output(1, DType::Int64, out_shape);
    if (k == 0) return;
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = reduce_acc_t<T>;
      const T* in = x.data<T>();
      T* out_v = values.data<T>();
      int64_t* out_i = indices.data<int64_t>();
      const bool largest = largest_;
      // a before b in the output order.
      auto before = [largest](const std::pair<A, int64_t>& a, const std::pair<A, int64_t>& b) {
        const bool an = nan_value(a.first), bn = nan_value(b.first);
        if (an || bn) {
          if (an && bn) return a.second < b.second;
          return largest ? an : bn;
        }
        if (a.first != b.first) return largest ? a.first > b.first : a.first < b.first;
        return a.second < b.second;
      };
      parallel_for(s.outer * s.inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(s.n, 1)),
                        [&](int64_t b, int64_t e) {
                          std::vector<std::pair<A, int64_t>> row(static_cast<size_t>(s.n));
                          for (int64_t l = b; l < e; ++l) {
                            const int64_t o = l / s.inner, j = l % s.inner;
                            const T* src = in + o * s.n * s.inner + j;
                            for (int64_t i = 0; i < s.n; ++i)
                              row[static_cast<size_t>(i)] = {static_cast<A>(load(src[i * s.inner])), i};
                            std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
                            const int64_t dst = o * k * s.inner + j;
                            for (int64_t i = 0; i < k; ++i) {
                              out_v[dst + i * s.inner] = store_from<T>(row[static_cast<size_t>(i)].first);
                              out_i[dst + i * s.inner] = row[static_cast<size_t>(i)].second;
                            }
                          }
                        });
    });
  }

 private:
  bool k_from_input_;
  int64_t k_attr_, axis_;
  bool largest_;
};

}  // namespace

MPA_OP_TRAITS("", "TopK", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "TopK", TopKOp, 1, 10, 11, 24);

}  // namespace mpa
