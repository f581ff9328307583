// QuantizeLinear and DequantizeLinear (10, 13, 19, 21, 23, 24, 25): per-tensor, per-axis and blocked
// scales; integer (uint2 to int16, int32 for dequantization) and narrow float (float8, float4) quantized
// types; output_dtype, saturate and precision attributes. DynamicQuantizeLinear (11). Arithmetic follows
// ONNX's reference: the division x / scale in the promoted float type (or `precision`), rounded to nearest
// even and saturated; dequantization (x - zero_point) in float32, times the scale in float32 (float64 for
// a float64 scale), rounded once to the output type.
#include "ops/quantize.h"

#include <algorithm>
#include <vector>

#include "ops/reduce.h"

namespace mpa {

double round_to_float_type(DType t, double v) {
  switch (t) {
    case DType::Float64: return v;
    case DType::Float16: return half_to_float(float_to_half(static_cast<float>(v)));
    case DType::BFloat16: return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v)));
    default: return static_cast<float>(v);
  }
}

DType promoted_float_type(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  return DType::Float32;  // float32 with anything narrower, and float16 with bfloat16
}

QuantGrid::QuantGrid(const std::string& who, const Shape& x_shape, const Tensor& scale, const Tensor* zero_point,
                     int64_t axis, int64_t block_size) {
  // A scalar and a one-element 1-D tensor both say "per tensor".
  if (zero_point && zero_point->shape() != scale.shape() && !(zero_point->numel() == 1 && scale.numel() == 1))
    fail(who + ": zero point of shape " + shape_str(zero_point->shape()) + " differs from the scale's " +
         shape_str(scale.shape()));
  if (block_size < 0) fail(who + ": block_size must be positive, not " + std::to_string(block_size));
  if (block_size == 0 && scale.numel() == 1 && scale.rank() <= 1) return;  // per tensor
  per_tensor_ = false;
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  const int64_t a = normalize_axis(axis, rank, who);
  const AxisSplit split = split_at_axis(x_shape, a);
  axis_dim_ = split.n;
  inner_ = split.inner;
  if (block_size == 0) {
    if (!(scale.rank() == 1 && scale.dim(0) == axis_dim_))
      fail(who + ": a per-axis scale must be 1-D of length " + std::to_string(axis_dim_) + " (axis " +
           std::to_string(a) + "), got " + shape_str(scale.shape()));
    return;
  }
  block_ = block_size;
  bool same_other_dims = scale.rank() == rank;
  for (int64_t d = 0; same_other_dims && d < rank; ++d)
    same_other_dims = d == a || scale.dim(static_cast<int>(d)) == x_shape[static_cast<size_t>(d)];
  blocks_ = same_other_dims ? scale.dim(static_cast<int>(a)) : 0;
  // Every block but the last is full: (blocks - 1) * block_size < D <= blocks * block_size.
  if (!(same_other_dims && blocks_ > 0 && (blocks_ - 1) * block_ < axis_dim_ && axis_dim_ <= blocks_ * block_))
    fail(who + ": a blocked scale of shape " + shape_str(scale.shape()) + " does not cut axis " + std::to_string(a) +
         " of input " + shape_str(x_shape) + " in blocks of " + std::to_string(block_size));
}

namespace {

bool is_quantized_float(DType t) { return dtype_is_narrow_float(t) && t != DType::Float8E8M0; }

// The float type an attribute names, failing naming the node for anything else.
DType float_type_attribute(const OpInit& init, const std::string& key) {
  const int64_t id = init.get_int(key, 0);
  if (id == 0) return DType::Undefined;
  const DType t = static_cast<DType>(id);
  if (!dtype_is_float(t))
    fail(init.node().label() + ": '" + key + "' must name a float type, not " +
         onnx_type_name(static_cast<int32_t>(id)));
  return t;
}

// Input 1 of QuantizeLinear and DequantizeLinear, which must be a float tensor.
const Tensor& float_scale(const KernelContext& ctx, const std::string& who) {
  const Tensor& scale = ctx.input(1);
  if (!dtype_is_float(scale.dtype())) fail(who + ": the scale must be a float tensor, not " + dtype_name(scale.dtype()));
  return scale;
}

class QuantizeLinearOp : public OpKernel {
 public:
  explicit QuantizeLinearOp(const OpInit& init)
      : axis_(init.get_int("axis", 1)),
        block_size_(init.get_int("block_size", 0)),
        saturate_(init.get_int("saturate", 1) != 0),
        output_dtype_(static_cast<int32_t>(init.get_int("output_dtype", 0))),
        precision_(float_type_attribute(init, "precision")) {}

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& x = ctx.input(0);
    const Tensor& scale = float_scale(ctx, who);
    const Tensor* zero_point = ctx.optional_input(2);
    DType out_t = output_dtype_ != 0 ? static_cast<DType>(output_dtype_) : DType::UInt8;
    if (zero_point) {
      if (output_dtype_ != 0 && zero_point->dtype() != out_t)
        fail(who + ": output_dtype " + dtype_name(out_t) + " differs from the zero point's " +
             dtype_name(zero_point->dtype()));
      out_t = zero_point->dtype();
    }
    const bool integer_out = dtype_is_signed_int(out_t) || dtype_is_unsigned_int(out_t) ||
                             (dtype_is_narrow(out_t) && !dtype_is_narrow_float(out_t));
    if (!(is_quantized_float(out_t) || (integer_out && dtype_size(out_t) <= 2)))
      fail(who + ": cannot quantize to " + dtype_name(out_t));
    const QuantGrid grid(who, x.shape(), scale, zero_point, axis_, block_size_);
    const DType div_t = precision_ != DType::Undefined ? precision_
                        : dtype_is_float(x.dtype())    ? promoted_float_type(x.dtype(), scale.dtype())
                                                       : promoted_float_type(DType::Float64, scale.dtype());
    const std::vector<double> xs = x.to_double_vector(), scales = scale.to_double_vector();
    const std::vector<double> zps = zero_point ? zero_point->to_double_vector() : std::vector<double>(1, 0.0);
    auto quotient = [&](int64_t i) {
      return round_to_float_type(div_t, round_to_float_type(div_t, xs[static_cast<size_t>(i)]) /
                                            round_to_float_type(div_t, scales[static_cast<size_t>(grid.index(i))]));
    };
    auto zp = [&](int64_t i) { return zero_point ? zps[static_cast<size_t>(grid.index(i))] : 0.0; };
    Tensor& y = ctx.allocate_output(0, out_t, x.shape());
    if (is_quantized_float(out_t)) {
      uint8_t* out = static_cast<uint8_t*>(y.raw());
      parallel_for(x.numel(), 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          // A zero zero point is not added: it would turn -0 into +0.
          const double z = zp(i);
          out[i] = float_to_narrow(out_t, static_cast<float>(z == 0 ? quotient(i) : quotient(i) + z), saturate_);
        }
      });
      return;
    }
    const auto [lo, hi] = integer_range(out_t);
    write_integers(y, who, [&, lo = lo, hi = hi](int64_t i) { return saturate_rounded(quotient(i), zp(i), lo, hi); });
  }

 private:
  int64_t axis_, block_size_;
  bool saturate_;
  int32_t output_dtype_;
  DType precision_;
};

class DequantizeLinearOp : public OpKernel {
 public:
  explicit DequantizeLinearOp(const OpInit& init)
      : axis_(init.get_int("axis", 1)),
        block_size_(init.get_int("block_size", 0)),
        output_dtype_(float_type_attribute(init, "output_dtype")) {}

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& x = ctx.input(0);
    const Tensor& scale = float_scale(ctx, who);
    const Tensor* zero_point = ctx.optional_input(2);
    if (dtype_is_float(x.dtype()) || x.dtype() == DType::Bool || x.dtype() == DType::Float8E8M0)
      fail(who + ": cannot dequantize " + dtype_name(x.dtype()));
    if (zero_point && zero_point->dtype() != x.dtype())
      fail(who + ": the zero point's type " + dtype_name(zero_point->dtype()) + " differs from the input's " +
           dtype_name(x.dtype()));
    const QuantGrid grid(who, x.shape(), scale, zero_point, axis_, block_size_);
    const DType out_t = output_dtype_ != DType::Undefined ? output_dtype_ : scale.dtype();
    const bool in_double = scale.dtype() == DType::Float64;
    const std::vector<double> xs = x.to_double_vector(), scales = scale.to_double_vector();
    const std::vector<double> zps = zero_point ? zero_point->to_double_vector() : std::vector<double>();
    Tensor& y = ctx.allocate_output(0, out_t, x.shape());
    visit_float(out_t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = y.data<T>();
      parallel_for(x.numel(), 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const size_t s = static_cast<size_t>(grid.index(i));
          const float centred =
              static_cast<float>(xs[static_cast<size_t>(i)]) - (zero_point ? static_cast<float>(zps[s]) : 0.0f);
          const double value = in_double ? centred * scales[s] : centred * static_cast<float>(scales[s]);
          out[i] = store<T>(static_cast<compute_t<T>>(value));
        }
      });
    });
  }

 private:
  int64_t axis_, block_size_;
  DType output_dtype_;
};

// y = saturate(round(x / scale) + zero_point) to uint8, with scale and zero point chosen from x's range
// widened to hold 0, all in float32 as the spec's function body computes them; NaNs do not widen it.
class DynamicQuantizeLinearOp : public OpKernel {
 public:
  explicit DynamicQuantizeLinearOp(const OpInit&) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::Float32) fail(ctx.node().label() + ": input must be float32, not " + dtype_name(x.dtype()));
    const float* in = x.data<float>();
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < x.numel(); ++i) {
      lo = std::min(lo, in[i]);
      hi = std::max(hi, in[i]);
    }
    // All zeros: scale 1, as onnxruntime (and the rule the reference's comment states; its code gives 1/255).
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float zero_point = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
    Tensor& y = ctx.allocate_output(0, DType::UInt8, x.shape());
    uint8_t* out = y.data<uint8_t>();
    parallel_for(x.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = static_cast<uint8_t>(saturate_rounded(in[i] / scale, zero_point, 0, 255));
    });
    *ctx.allocate_output(1, DType::Float32, {}).data<float>() = scale;
    *ctx.allocate_output(2, DType::UInt8, {}).data<uint8_t>() = static_cast<uint8_t>(zero_point);
  }
};

}  // namespace

MPA_OP_TRAITS("", "QuantizeLinear", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "QuantizeLinear", QuantizeLinearOp, 10, 13, 19, 21, 23, 24, 25);
MPA_OP_TRAITS("", "DequantizeLinear", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "DequantizeLinear", DequantizeLinearOp, 10, 13, 19, 21, 23, 24, 25);
MPA_OP_TRAITS("", "DynamicQuantizeLinear", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "DynamicQuantizeLinear", DynamicQuantizeLinearOp, 11);

}  // namespace mpa
