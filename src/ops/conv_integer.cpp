// ConvInteger (10) and QLinearConv (10): convolution of int8/uint8 tensors with zero points (x per tensor,
// w per tensor or per output channel), int32 sums (exact) over a direct loop, any number of spatial dims,
// groups, strides, dilations, pads. QLinearConv adds its int32 bias to the sums and rescales each once,
// as ONNX's reference does: sum * (x_scale * w_scale / y_scale) (float32 scales, the product in float64),
// plus y_zero_point, rounded to nearest even and saturated.
#include <algorithm>
#include <vector>

#include "ops/conv_geometry.h"
#include "ops/quantize.h"

namespace mpa {

namespace {

// The zero point of entry i: per tensor, or per entry of the dimension `dim` (output channels).
std::vector<int64_t> zero_points(const std::string& who, const char* name, const Tensor& x, const Tensor* zero_point,
                                 int64_t dim) {
  if (!(x.dtype() == DType::Int8 || x.dtype() == DType::UInt8))
    fail(who + ": " + name + " must be int8 or uint8, not " + dtype_name(x.dtype()));
  if (!zero_point) return {0};
  if (zero_point->dtype() != x.dtype())
    fail(who + ": " + name + "'s zero point is " + dtype_name(zero_point->dtype()) + ", not " + dtype_name(x.dtype()));
  if (!(zero_point->numel() == 1 || (zero_point->rank() == 1 && zero_point->dim(0) == dim)))
    fail(who + ": " + name + "'s zero point must be a scalar or 1-D of length " + std::to_string(dim));
  return zero_point->to_int64_vector();
}

struct IntegerConv {
  Shape out_shape;
  int64_t out_channels = 0, out_size = 0;  // per image: out_channels planes of out_size
  std::vector<int32_t> sums;
};

IntegerConv integer_conv(const std::string& who, const WindowAttrs& attrs, int64_t group, const Tensor& x,
                         const Tensor* x_zero_point, const Tensor& w, const Tensor* w_zero_point, const Tensor* bias) {
  if (!(x.rank() >= 3 && w.rank() == x.rank()))
    fail(who + ": input " + shape_str(x.shape()) + " and kernel " + shape_str(w.shape()) +
         " must be N x C x spatial... of the same rank");
  const int64_t batch = x.dim(0), channels = x.dim(1), out_channels = w.dim(0), cg = w.dim(1);
  if (!(group > 0 && channels == cg * group && out_channels % group == 0))
    fail(who + ": " + std::to_string(channels) + " input channels, " + std::to_string(out_channels) + " kernels of " +
         std::to_string(cg) + " channels do not fit group " + std::to_string(group));
  const std::vector<int64_t> xz = zero_points(who, "x", x, x_zero_point, 1);
  const std::vector<int64_t> wz = zero_points(who, "w", w, w_zero_point, out_channels);
  if (bias && !(bias->dtype() == DType::Int32 && bias->numel() == out_channels))
    fail(who + ": bias must be int32 of " + std::to_string(out_channels) + " elements");
  const Shape in_spatial(x.shape().begin() + 2, x.shape().end()), kernel(w.shape().begin() + 2, w.shape().end());
  const WindowGeometry g = window_geometry(who, attrs, in_spatial, kernel);
  const size_t nd = g.rank();
  const std::vector<int64_t> xs = x.to_int64_vector(), ws = w.to_int64_vector();
  const std::vector<int64_t> bs = bias ? bias->to_int64_vector() : std::vector<int64_t>(out_channels, 0);
  IntegerConv c;
  c.out_shape = {batch, out_channels};
  c.out_shape.insert(c.out_shape.end(), g.out.begin(), g.out.end());
  c.out_channels = out_channels;
  c.out_size = g.out_size();
  c.sums.assign(static_cast<size_t>(batch * out_channels * c.out_size), 0);
  const int64_t mg = out_channels / group, ksize = g.kernel_size(), in_size = g.in_size();
  parallel_for(batch * out_channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> at(nd), ko(nd);
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / out_channels, oc = plane % out_channels, first_c = (oc / mg) * cg;
      const int64_t w_zero = wz[wz.size() == 1 ? 0 : static_cast<size_t>(oc)];
      int32_t* out = c.sums.data() + plane * c.out_size;
      for (int64_t o = 0; o < c.out_size; ++o) {
        int64_t sum = bs[static_cast<size_t>(oc)];
        for (int64_t k = 0; k < ksize; ++k) {
          // Input position of output o under kernel offset k, per dim; -1 in the padding.
          int64_t in_pos = 0;
          for (int64_t d = static_cast<int64_t>(nd) - 1, oo = o, kk = k; d >= 0; --d) {
            const size_t u = static_cast<size_t>(d);
            at[u] = (oo % g.out[u]) * g.stride[u] - g.pad_begin[u] + (kk % g.kernel[u]) * g.dilation[u];
            oo /= g.out[u];
            kk /= g.kernel[u];
          }
          for (size_t d = 0; d < nd && in_pos >= 0; ++d)
            in_pos = at[d] < 0 || at[d] >= g.in[d] ? -1 : in_pos * g.in[d] + at[d];
          if (in_pos < 0) continue;  // padding: x - x_zero_point is 0 there
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t xv = xs[static_cast<size_t>((n * channels + first_c + ci) * in_size + in_pos)] - xz[0];
            const int64_t wv = ws[static_cast<size_t>((oc * cg + ci) * ksize + k)] - w_zero;
            sum += xv * wv;
          }
        }
        out[o] = static_cast<int32_t>(sum);
      }
    }
  });
  return c;
}

class ConvIntegerOp : public OpKernel {
 public:
  explicit ConvIntegerOp(const OpInit& init) : attrs_(WindowAttrs::read(init)), group_(init.get_int("group", 1)) {}
  void compute(KernelContext& ctx) const override {
    const IntegerConv c = integer_conv(ctx.node().label(), attrs_, group_, ctx.input(0), ctx.optional_input(2),
                                       ctx.input(1), ctx.optional_input(3), nullptr);
    Tensor& y = ctx.allocate_output(0, DType::Int32, c.out_shape);
    std::copy(c.sums.begin(), c.sums.end(), y.data<int32_t>());
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

class QLinearConvOp : public OpKernel {
 public:
  explicit QLinearConvOp(const OpInit& init) : attrs_(WindowAttrs::read(init)), group_(init.get_int("group", 1)) {}
  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor &x_scale = ctx.input(1), &w = ctx.input(3), &w_scale = ctx.input(4), &y_scale = ctx.input(6);
    const Tensor& y_zero_point = ctx.input(7);
    const IntegerConv c =
        integer_conv(who, attrs_, group_, ctx.input(0), &ctx.input(2), w, &ctx.input(5), ctx.optional_input(8));
    if (!(x_scale.dtype() == DType::Float32 && w_scale.dtype() == DType::Float32 && y_scale.dtype() == DType::Float32))
      fail(who + ": scales must be float32");
    if (!(x_scale.numel() == 1 && y_scale.numel() == 1 && y_zero_point.numel() == 1 &&
          (w_scale.numel() == 1 || (w_scale.rank() == 1 && w_scale.dim(0) == c.out_channels))))
      fail(who + ": x_scale, y_scale and y_zero_point must be scalars, w_scale a scalar or one per output channel");
    const float sx = x_scale.data<float>()[0], sy = y_scale.data<float>()[0];
    const float* sw = w_scale.data<float>();
    const double zero_point = y_zero_point.to_double_vector()[0];
    const auto [lo, hi] = integer_range(y_zero_point.dtype());
    Tensor& y = ctx.allocate_output(0, y_zero_point.dtype(), c.out_shape);
    write_integers(y, who, [&, lo = lo, hi = hi](int64_t i) {
      const float s = sw[w_scale.numel() == 1 ? 0 : (i / c.out_size) % c.out_channels];
      const float multiplier = sx * s / sy;
      return saturate_rounded(c.sums[static_cast<size_t>(i)] * static_cast<double>(multiplier), zero_point, lo, hi);
    });
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

// Integer sums are exact: no float rounding anywhere in ConvInteger.
MPA_OP_TRAITS("", "ConvInteger", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "ConvInteger", ConvIntegerOp, 10);
// One rounding per output element (the rescale), after exact integer sums.
MPA_OP_TRAITS("", "QLinearConv", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "QLinearConv", QLinearConvOp, 10);

}  // namespace mpa
