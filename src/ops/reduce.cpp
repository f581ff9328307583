// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp: one kernel class over the accumulators of src/kernels/reduce.h, and the shared reduction
// geometry declared in ops/reduce.h.
//
// Versions: axes is an attribute up to opset 17 (ReduceSum: 12) and an optional second input from opset 18
// (ReduceSum: 13), which also adds noop_with_empty_axes. Negative axes from opset 11. Empty-set reductions
// give the ONNX reference values (0, 1, -inf, +inf, NaN for a float mean).
#include "ops/reduce.h"

#include "kernels/reduce.h"
#include "ops/op.h"

namespace mpa {

// [SECTION] Axes and geometry

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& who) {
  if (axis < -rank || axis >= rank)
    fail(who + ": axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const std::string& who) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) out.push_back(normalize_axis(a, rank, who));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    const int64_t d = shape[static_cast<size_t>(i)];
    if (i < axis)
      s.outer *= d;
    else if (i == axis)
      s.n = d;
    else
      s.inner *= d;
  }
  return s;
}

AxisSplit softmax_rows_of(const Shape& shape, int64_t axis, bool coerce_2d, const std::string& who) {
  AxisSplit s;
  if (shape.empty()) return s;
  s = split_at_axis(shape, normalize_axis(axis, static_cast<int64_t>(shape.size()), who));
  if (coerce_2d) {
    s.n *= s.inner;
    s.inner = 1;
  }
  return s;
}

std::vector<int64_t> reduce_axes(const KernelContext& ctx, int64_t rank, bool axes_from_input,
                                 bool noop_with_empty_axes, const std::vector<int64_t>& attr_axes) {
  const std::string who = ctx.node().label();
  std::vector<int64_t> axes = attr_axes;
  if (axes_from_input) {
    axes.clear();
    if (const Tensor* t = ctx.optional_input(1)) {
      if (!(t->dtype() == DType::Int64 || t->dtype() == DType::Int32)) fail(who + ": axes must be an int64 tensor");
      axes = t->to_int64_vector();
    }
  }
  if (axes.empty() && !noop_with_empty_axes)
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  return normalize_axes(axes, rank, who);
}

ReducePlan::ReducePlan(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  const size_t rank = in.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  for (size_t i = 0; i < rank; ++i) {
    kept_shape_.push_back(reduced[i] ? 1 : in[i]);
    if (!reduced[i] || keepdims) out_shape_.push_back(reduced[i] ? 1 : in[i]);
    if (reduced[i])
      reduce_count_ *= in[i];
    else
      out_count_ *= in[i];
  }
  // Merge into alternating kept/reduced groups (innermost first), dropping size-1 dims.
  struct Group {
    bool reduced;
    int64_t size, stride;
  };
  std::vector<Group> groups;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    const int64_t d = in[i];
    if (d != 1) {
      if (!groups.empty() && groups.back().reduced == reduced[i] && groups.back().stride * groups.back().size == stride)
        groups.back().size *= d;
      else
        groups.push_back({static_cast<bool>(reduced[i]), d, stride});
    }
    stride *= d;
  }
  std::reverse(groups.begin(), groups.end());  // outermost first
  int reduced_groups = 0;
  for (const Group& g : groups) reduced_groups += g.reduced ? 1 : 0;
  if (reduced_groups <= 1) {
    simple_ = true;
    bool after = false;
    for (const Group& g : groups) {
      if (g.reduced) {
        reduced_ = g.size;
        after = true;
      } else if (after) {
        inner_ *= g.size;
      } else {
        outer_ *= g.size;
      }
    }
    if (reduce_count_ == 0) reduced_ = 0;
    return;
  }
  simple_ = false;
  std::vector<int64_t> red_dims, red_strides;
  for (const Group& g : groups) {
    (g.reduced ? red_dims : kept_dims_).push_back(g.size);
    (g.reduced ? red_strides : kept_strides_).push_back(g.stride);
  }
  run_length_ = red_dims.back();
  run_stride_ = red_strides.back();
  red_dims.pop_back();
  red_strides.pop_back();
  block_offsets_ = {0};
  for (size_t g = 0; g < red_dims.size(); ++g) {
    std::vector<int64_t> next;
    next.reserve(block_offsets_.size() * static_cast<size_t>(red_dims[g]));
    for (int64_t off : block_offsets_)
      for (int64_t k = 0; k < red_dims[g]; ++k) next.push_back(off + k * red_strides[g]);
    block_offsets_ = std::move(next);
  }
}

int64_t ReducePlan::base_offset(int64_t out_index) const {
  int64_t offset = 0;
  for (size_t g = kept_dims_.size(); g-- > 0;) {
    offset += (out_index % kept_dims_[g]) * kept_strides_[g];
    out_index /= kept_dims_[g];
  }
  return offset;
}

// [SECTION] The Reduce* kernels

namespace {

// ORT CUDA EP rule (docs/numerics.md, "ReduceMean (ORT fast path)"): when the reduced axes are contiguous and
// leading or trailing (a matrix row or column reduction), ORT sums in float, writes the sum to the fp16
// output, then divides it by fp16(N) in place: RN16(RN16(sum) / RN16(N)). The stored sum overflows to Inf
// once it reaches 65520, however small the mean.
bool ort_cuda_mean_takes_fast_path(const ExecConfig& config, DType dtype, const ReducePlan& plan) {
  return ort_cuda_fp16_rules(config, dtype) && plan.simple() && (plan.outer() == 1 || plan.inner() == 1);
}
float ort_cuda_fast_path_mean(float sum, int64_t count) {
  const float stored_sum = round_to_format(Format::FP16, sum);
  return round_to_format(Format::FP16, stored_sum / round_to_format(Format::FP16, static_cast<float>(count)));
}

// kAxesInputSince: the opset from which axes is the second input and noop_with_empty_axes exists.
// kAllowsBool: ReduceMax/ReduceMin (opset 20) accept bool.
template <template <class> class F, int64_t kAxesInputSince, bool kAllowsBool = false>
class ReduceOp : public OpKernel {
 public:
  explicit ReduceOp(const OpInit& init)
      : axes_from_input_(init.opset() >= kAxesInputSince),
        keepdims_(init.get_int("keepdims", 1) != 0),
        noop_with_empty_axes_(axes_from_input_ && init.get_int("noop_with_empty_axes", 0) != 0),
        attr_axes_(init.get_ints("axes")) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::string who = ctx.node().label();
    const ReducePlan plan(x.shape(), reduce_axes(ctx, x.rank(), axes_from_input_, noop_with_empty_axes_, attr_axes_),
                          keepdims_);
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool> && !kAllowsBool) {
        fail(who + ": bool input is not allowed for this op");
      } else {
        Tensor& y = ctx.allocate_output(0, x.dtype(), plan.out_shape());
        T* out = y.data<T>();
        const F<T> f{};
        if constexpr (std::is_same_v<F<T>, ReduceMeanF<T>> && std::is_same_v<typename F<T>::Acc, float>) {
          if (ort_cuda_mean_takes_fast_path(ctx.config(), x.dtype(), plan)) {
            run_reduction(plan, x.data<T>(), f, [&](int64_t o, float sum) {
              out[o] = store<T>(ort_cuda_fast_path_mean(sum, plan.reduce_count()));
            });
            return;
          }
        }
        run_reduction(plan, x.data<T>(), f,
                      [&](int64_t o, const typename F<T>::Acc& a) { out[o] = f.finalize(a, plan.reduce_count()); });
      }
    });
  }

 private:
  bool axes_from_input_, keepdims_, noop_with_empty_axes_;
  std::vector<int64_t> attr_axes_;
};

using ReduceSumKernel = ReduceOp<ReduceSumF, 13>;
using ReduceMeanKernel = ReduceOp<ReduceMeanF, 18>;
using ReduceMaxKernel = ReduceOp<ReduceMaxF, 18, true>;
using ReduceMinKernel = ReduceOp<ReduceMinF, 18, true>;
using ReduceProdKernel = ReduceOp<ReduceProdF, 18>;
using ReduceL1Kernel = ReduceOp<ReduceL1F, 18>;
using ReduceL2Kernel = ReduceOp<ReduceL2F, 18>;
using ReduceSumSquareKernel = ReduceOp<ReduceSumSquareF, 18>;
using ReduceLogSumKernel = ReduceOp<ReduceLogSumF, 18>;
using ReduceLogSumExpKernel = ReduceOp<ReduceLogSumExpF, 18>;

}  // namespace

MPA_OP_TRAITS("", "ReduceSum",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceSum", ReduceSumKernel, 1, 11, 13);
MPA_OP_TRAITS("", "ReduceMean",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceMean", ReduceMeanKernel, 1, 11, 13, 18);
MPA_OP_TRAITS("", "ReduceMax", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceMax", ReduceMaxKernel, 1, 11, 12, 13, 18, 20);
MPA_OP_TRAITS("", "ReduceMin", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceMin", ReduceMinKernel, 1, 11, 12, 13, 18, 20);
MPA_OP_TRAITS("", "ReduceProd",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceProd", ReduceProdKernel, 1, 11, 13, 18);
MPA_OP_TRAITS("", "ReduceL1", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceL1", ReduceL1Kernel, 1, 11, 13, 18);
MPA_OP_TRAITS("", "ReduceL2", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceL2", ReduceL2Kernel, 1, 11, 13, 18);
MPA_OP_TRAITS("", "ReduceSumSquare",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceSumSquare", ReduceSumSquareKernel, 1, 11, 13, 18);
MPA_OP_TRAITS("", "ReduceLogSum",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceLogSum", ReduceLogSumKernel, 1, 11, 13, 18);
MPA_OP_TRAITS("", "ReduceLogSumExp",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReduceLogSumExp", ReduceLogSumExpKernel, 1, 11, 13, 18);

}  // namespace mpa
