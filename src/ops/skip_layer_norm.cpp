// com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization (onnxruntime contrib ops, emitted
// by its transformer optimizer for the residual Add + LayerNormalization of every transformer block):
// s = input + skip (+ bias), then LayerNormalization of s over the last dimension with gamma (and beta), or
// its RMS form with gamma. skip has input's shape or broadcasts over the leading dimensions ([1, S, H],
// [S, H]); gamma, beta and bias are [H].
// Optional outputs: mean and inv_std_var (compute type, input.shape[:-1] + [1]: onnxruntime's CPU and CUDA
// kernels leave them empty, mpaudit fills them; the simplified form's mean is 0) and input_skip_bias_sum
// (input's type and shape, s stored once).
#include "ops/normalize.h"
#include "ops/op.h"

namespace mpa {
namespace {

// skip's shape with its leading 1s dropped must be a suffix of input's, so that its rows repeat over
// input's rows; returns the number of skip rows.
int64_t skip_rows(const std::string& who, const Tensor& input, const Tensor& skip, int64_t hidden) {
  Shape tail = skip.shape();
  while (tail.size() > 1 && tail.front() == 1) tail.erase(tail.begin());
  const Shape& in = input.shape();
  bool ok = tail.size() <= in.size() && !tail.empty() && tail.back() == hidden;
  for (size_t i = 0; ok && i < tail.size(); ++i) ok = tail[i] == in[in.size() - tail.size() + i];
  if (!ok) fail(who + ": skip of shape " + shape_str(skip.shape()) + " does not match input " + shape_str(in));
  return shape_numel(tail) / std::max<int64_t>(hidden, 1);
}

template <class Stats, bool kHasBeta>
class SkipNormOp : public OpKernel {
 public:
  explicit SkipNormOp(const OpInit& init) : epsilon_(init.get_float("epsilon", 1e-12f)) {}

  void compute(KernelContext& ctx) const override {
    // Inputs: input, skip, gamma, [beta,] bias; the simplified form has no beta.
    constexpr size_t kBias = kHasBeta ? 4 : 3;
    const Tensor& x = ctx.input(0);
    const Tensor& skip = ctx.input(1);
    const std::string who = ctx.node().label();
    if (!(x.rank() >= 1)) fail(who + ": input must have rank >= 1, got " + shape_str(x.shape()));
    if (!(skip.dtype() == x.dtype()))
      fail(who + ": skip is " + dtype_name(skip.dtype()) + ", input " + dtype_name(x.dtype()));
    const int64_t n = x.shape().back();
    const int64_t rows = n == 0 ? 0 : x.numel() / n;
    const int64_t skip_count = skip_rows(who, x, skip, n);
    const TrailingSplit split = trailing_split(x.shape(), x.rank() - 1);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const std::vector<A> gamma = param_expanded<A>(ctx.input(2), split.norm_shape, who, "gamma");
      const Tensor* beta_t = kHasBeta ? ctx.optional_input(3) : nullptr;
      const Tensor* bias_t = ctx.optional_input(kBias);
      std::vector<A> beta, bias;
      if (beta_t) beta = param_expanded<A>(*beta_t, split.norm_shape, who, "beta");
      if (bias_t) bias = param_expanded<A>(*bias_t, split.norm_shape, who, "bias");
      auto optional_output = [&](size_t i, DType type, const Shape& shape) -> Tensor* {
        return ctx.num_outputs() > i && ctx.output_requested(i) ? &ctx.allocate_output(i, type, shape) : nullptr;
      };
      Tensor* mean_t = optional_output(1, dtype_of<A>, split.stat_shape);
      Tensor* inv_std_t = optional_output(2, dtype_of<A>, split.stat_shape);
      Tensor* sum_t = optional_output(3, x.dtype(), x.shape());
      const T* in = x.data<T>();
      const T* sk = skip.data<T>();
      T* out = y.data<T>();
      const A eps = static_cast<A>(epsilon_);
      parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        std::vector<A> row(static_cast<size_t>(n));
        for (int64_t r = b; r < e; ++r) {
          const T* xr = in + r * n;
          const T* sr = sk + (r % skip_count) * n;
          for (int64_t i = 0; i < n; ++i) row[i] = load(xr[i]) + load(sr[i]) + (bias_t ? bias[i] : A(0));
          if (sum_t)
            for (int64_t i = 0; i < n; ++i) sum_t->data<T>()[r * n + i] = store<T>(row[i]);
          const RowStats<A> st =
              normalize_sum_row<Stats>(row.data(), out + r * n, n, eps, gamma.data(), beta_t ? beta.data() : nullptr);
          if (mean_t) mean_t->data<A>()[r] = st.mean;
          if (inv_std_t) inv_std_t->data<A>()[r] = st.inv_std;
        }
      });
    });
  }

 private:
  float epsilon_;
};

using SkipLayerNormalizationKernel = SkipNormOp<MeanInvStdRow, true>;
using SkipSimplifiedLayerNormalizationKernel = SkipNormOp<RmsInvRow, false>;

}  // namespace

MPA_OP_TRAITS("com.microsoft", "SkipLayerNormalization",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {2, 3, 4}});
MPA_REGISTER_OP("com.microsoft", "SkipLayerNormalization", SkipLayerNormalizationKernel, 1);
MPA_OP_TRAITS("com.microsoft", "SkipSimplifiedLayerNormalization",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {2, 3}});
MPA_REGISTER_OP("com.microsoft", "SkipSimplifiedLayerNormalization", SkipSimplifiedLayerNormalizationKernel, 1);

}  // namespace mpa
