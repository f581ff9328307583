// LayerNormalization (17), RMSNormalization (23) and onnxruntime's SimplifiedLayerNormalization: the tensor
// is [rows, n] with n = prod(shape[axis:]); each row is normalised by its own statistics (mean and variance,
// or mean square) and scaled (and shifted) by Scale/B broadcast over shape[axis:]. Statistics are computed
// in float for 16-bit storage (stash_type 1) and in double for float64. LayerNormalization's optional Mean
// and InvStdDev outputs, and SimplifiedLayerNormalization's InvStdDev, have shape[:axis] + [1] * (rank -
// axis), in float (double for float64 input).
#include "kernels/normalize.h"
#include "ops/normalize.h"
#include "ops/op.h"
#include "ops/reduce.h"

namespace mpa {
namespace {

// kMeanOut, kInvStdOut: the output indices of the optional statistics (-1: none).
template <class Stats, bool kHasBias, int kMeanOut, int kInvStdOut>
class TrailingNormOp : public OpKernel {
 public:
  explicit TrailingNormOp(const OpInit& init)
      : axis_(init.get_int("axis", -1)), epsilon_(init.get_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale_t = ctx.input(1);
    const Tensor* bias_t = kHasBias ? ctx.optional_input(2) : nullptr;
    const std::string who = ctx.node().label();
    const int64_t axis = normalize_axis(axis_, x.rank(), who);
    const TrailingSplit split = trailing_split(x.shape(), axis);
    const int64_t rows = split.rows, n = split.n;
    const Shape &norm_shape = split.norm_shape, &stat_shape = split.stat_shape;
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const std::vector<A> scale = param_expanded<A>(scale_t, norm_shape, who, "Scale");
      std::vector<A> bias;
      if (bias_t) bias = param_expanded<A>(*bias_t, norm_shape, who, "B");
      const DType stat_type = dtype_of<A>;
      auto statistic = [&](int i) -> A* {
        const bool wanted = i >= 0 && ctx.num_outputs() > static_cast<size_t>(i) && ctx.output_requested(i);
        return wanted ? ctx.allocate_output(i, stat_type, stat_shape).template data<A>() : nullptr;
      };
      A* mean_out = statistic(kMeanOut);
      A* inv_std_out = statistic(kInvStdOut);
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const A eps = static_cast<A>(epsilon_);
      parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const RowStats<A> st = Stats{}(in + r * n, n, eps);
          NormalizeAffineRow{}(in + r * n, out + r * n, n, st, scale.data(), 1, bias_t ? bias.data() : nullptr, 1);
          if (mean_out) mean_out[r] = st.mean;
          if (inv_std_out) inv_std_out[r] = st.inv_std;
        }
      });
    });
  }

 private:
  int64_t axis_;
  float epsilon_;
};

using LayerNormalizationKernel = TrailingNormOp<MeanInvStdRow, true, 1, 2>;
using RMSNormalizationKernel = TrailingNormOp<RmsInvRow, false, -1, -1>;
using SimplifiedLayerNormalizationKernel = TrailingNormOp<RmsInvRow, false, -1, 1>;

}  // namespace

MPA_OP_TRAITS("", "LayerNormalization",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1, 2}});
MPA_REGISTER_OP("", "LayerNormalization", LayerNormalizationKernel, 17);
MPA_OP_TRAITS("", "RMSNormalization",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1, 2}});
MPA_REGISTER_OP("", "RMSNormalization", RMSNormalizationKernel, 23);
// onnxruntime's contrib op of RMS normalisation, registered by it in the ONNX domain (since 1) and emitted
// by its transformer optimizer: RMSNormalization with an optional inv_std_var output (output 1).
MPA_OP_TRAITS("", "SimplifiedLayerNormalization",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "SimplifiedLayerNormalization", SimplifiedLayerNormalizationKernel, 1);

}  // namespace mpa
