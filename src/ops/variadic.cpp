// Variadic elementwise ops with numpy broadcasting over all inputs: Sum Mean Min Max. The inputs are
// folded in the compute type block by block and the result is stored once, so 16-bit storage sees one
// rounding per op (not one per input pair).
#include <algorithm>

#include "kernels/binary.h"
#include "ops/elementwise.h"

namespace mpa {

template <class F, TypeSet S, bool kMean = false>
class VariadicOp : public OpKernel {
 public:
  explicit VariadicOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const size_t n = ctx.num_inputs();
    if (!(n >= 1)) fail(node.label() + ": needs at least one input");
    std::vector<Shape> shapes;
    for (size_t k = 0; k < n; ++k) {
      const Tensor& t = ctx.input(k);
      if (!(t.dtype() == ctx.input(0).dtype()))
        fail(node.label() + ": inputs have different element types " + dtype_name(ctx.input(0).dtype()) + " and " +
             dtype_name(t.dtype()));
      shapes.push_back(t.shape());
    }
    const Shape out_shape = broadcast_output_shape(node, shapes);
    visit_types<S>(node, ctx.input(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      std::vector<const T*> in(n);
      for (size_t k = 0; k < n; ++k) in[k] = ctx.input(k).template data<T>();
      T* out = ctx.allocate_output(0, dtype_of<T>, out_shape).template data<T>();
      const F f{};
      for_each_broadcast_span(out_shape, shapes, cpu::kElementwiseGrain,
                              [&](int64_t o, const int64_t* off, const int64_t* step, int64_t length) {
                                constexpr int64_t kBlock = 512;
                                C acc[kBlock];
                                for (int64_t start = 0; start < length; start += kBlock) {
                                  const int64_t m = std::min(kBlock, length - start);
                                  for (size_t k = 0; k < n; ++k) {
                                    const T* p = in[k] + off[k] + start * step[k];
                                    if (k == 0 && step[k]) {
                                      for (int64_t i = 0; i < m; ++i) acc[i] = load(p[i]);
                                    } else if (k == 0) {
                                      std::fill(acc, acc + m, load(*p));
                                    } else if (step[k]) {
                                      for (int64_t i = 0; i < m; ++i) acc[i] = f(acc[i], load(p[i]));
                                    } else {
                                      const C v = load(*p);
                                      for (int64_t i = 0; i < m; ++i) acc[i] = f(acc[i], v);
                                    }
                                  }
                                  T* q = out + o + start;
                                  if constexpr (kMean) {
                                    const C count = static_cast<C>(n);
                                    for (int64_t i = 0; i < m; ++i) q[i] = store<T>(acc[i] / count);
                                  } else {
                                    for (int64_t i = 0; i < m; ++i) q[i] = store<T>(acc[i]);
                                  }
                                }
                              });
    });
  }
};

using SumOp = VariadicOp<AddF, TypeSet::Float>;
using MeanOp = VariadicOp<AddF, TypeSet::Float, true>;
using MinOp = VariadicOp<MinF, TypeSet::Numeric>;
using MaxOp = VariadicOp<MaxF, TypeSet::Numeric>;

MPA_OP_TRAITS("", "Sum", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "Sum", SumOp, 1, 6, 8, 13);
MPA_OP_TRAITS("", "Mean", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "Mean", MeanOp, 1, 6, 8, 13);
MPA_OP_TRAITS("", "Min", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Min", MinOp, 1, 6, 8, 12, 13);
MPA_OP_TRAITS("", "Max", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Max", MaxOp, 1, 6, 8, 12, 13);

}  // namespace mpa
