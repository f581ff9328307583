// DeformConv (19, 22): 2-D convolution whose kernel taps sample X at learned offsets (bilinear, zero outside
// the image, as GridSample with align_corners), each tap's sample scaled by an optional mask. Sampled taps
// are gathered per image into columns [C * kH * kW, oH * oW] once, then every output channel is a dot
// product over its group's rows.
#include <cmath>

#include "ops/compute_buffer.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

// X's plane at (y, x), bilinear, zero outside.
template <class Acc>
Acc bilinear(const Acc* plane, int64_t height, int64_t width, Acc y, Acc x) {
  if (!(y > Acc(-1) && y < Acc(height) && x > Acc(-1) && x < Acc(width))) return Acc(0);
  const Acc y0f = std::floor(y), x0f = std::floor(x);
  const int64_t y0 = int64_t(y0f), x0 = int64_t(x0f);
  const Acc ly = y - y0f, lx = x - x0f;
  const auto at = [&](int64_t r, int64_t c) {
    return r >= 0 && r < height && c >= 0 && c < width ? plane[r * width + c] : Acc(0);
  };
  return (Acc(1) - ly) * ((Acc(1) - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
         ly * ((Acc(1) - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
}

class DeformConvOp : public OpKernel {
 public:
  explicit DeformConvOp(const OpInit& init)
      : dilations_(init.get_ints("dilations", {1, 1})),
        pads_(init.get_ints("pads", {0, 0, 0, 0})),
        strides_(init.get_ints("strides", {1, 1})),
        kernel_(init.get_ints("kernel_shape")),
        group_(init.get_int("group", 1)),
        offset_group_(init.get_int("offset_group", 1)) {
    if (dilations_.size() != 2 || pads_.size() != 4 || strides_.size() != 2 ||
        (!kernel_.empty() && kernel_.size() != 2))
      fail(init.node().label() + ": only 2-D DeformConv is supported (dilations, pads, strides of 2 spatial dims)");
    if (group_ <= 0 || offset_group_ <= 0) fail(init.node().label() + ": group and offset_group must be positive");
  }

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& offset = ctx.input(2);
    if (x.rank() != 4 || w.rank() != 4 || offset.rank() != 4)
      fail(node.label() + ": only 2-D DeformConv is supported (X, W and offset of rank 4)");
    const int64_t batch = x.dim(0), in_c = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t out_c = w.dim(0), kh = w.dim(2), kw = w.dim(3);
    if (!kernel_.empty() && (kernel_[0] != kh || kernel_[1] != kw))
      fail(node.label() + ": kernel_shape does not match W " + shape_str(w.shape()));
    if (in_c != w.dim(1) * group_ || out_c % group_ != 0 || in_c % offset_group_ != 0)
      fail(node.label() + ": X " + shape_str(x.shape()) + " and W " + shape_str(w.shape()) + " do not fit group " +
           std::to_string(group_) + " and offset_group " + std::to_string(offset_group_));
    const int64_t oh = (height + pads_[0] + pads_[2] - (kh - 1) * dilations_[0] - 1) / strides_[0] + 1;
    const int64_t ow = (width + pads_[1] + pads_[3] - (kw - 1) * dilations_[1] - 1) / strides_[1] + 1;
    const int64_t taps = kh * kw, pixels = oh * ow;
    if (offset.shape() != Shape{batch, offset_group_ * taps * 2, oh, ow})
      fail(node.label() + ": offset " + shape_str(offset.shape()) + " is not " +
           shape_str({batch, offset_group_ * taps * 2, oh, ow}));
    const Tensor* bias = ctx.optional_input(3);
    const Tensor* mask = ctx.optional_input(4);
    if (bias && bias->numel() != out_c) fail(node.label() + ": B must have " + std::to_string(out_c) + " values");
    if (mask && mask->shape() != Shape{batch, offset_group_ * taps, oh, ow})
      fail(node.label() + ": mask " + shape_str(mask->shape()) + " is not " +
           shape_str({batch, offset_group_ * taps, oh, ow}));
    for (const Tensor* t : {&w, &offset, bias, mask})
      if (t && t->dtype() != x.dtype()) fail(node.label() + ": every float input must have X's element type");
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), {batch, out_c, oh, ow});
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      std::vector<Acc> xh, wh, oh_, bh, mh;
      const Acc* in = as_acc<T>(x, xh);
      const Acc* weights = as_acc<T>(w, wh);
      const Acc* offsets = as_acc<T>(offset, oh_);
      const Acc* biases = bias ? as_acc<T>(*bias, bh) : nullptr;
      const Acc* masks = mask ? as_acc<T>(*mask, mh) : nullptr;
      AccOutput<T> out(y);
      Acc* o = out.data();
      const int64_t in_per_group = in_c / group_, out_per_group = out_c / group_, in_per_offset = in_c / offset_group_;
      std::vector<Acc> columns(size_t(in_c * taps * pixels));
      for (int64_t n = 0; n < batch; ++n) {
        // Row (c, tap) of the columns: channel c sampled at tap's offset position for every output pixel.
        parallel_for(in_c * taps, 1, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const int64_t c = row / taps, tap = row % taps, g = c / in_per_offset;
            const Acc* plane = in + (n * in_c + c) * height * width;
            const Acc* dy = offsets + ((n * offset_group_ + g) * taps + tap) * 2 * pixels;
            const Acc* dx = dy + pixels;
            const Acc* m = masks ? masks + ((n * offset_group_ + g) * taps + tap) * pixels : nullptr;
            Acc* col = columns.data() + row * pixels;
            for (int64_t p = 0; p < pixels; ++p) {
              const Acc y0 = Acc(p / ow * strides_[0] - pads_[0] + tap / kw * dilations_[0]);
              const Acc x0 = Acc(p % ow * strides_[1] - pads_[1] + tap % kw * dilations_[1]);
              const Acc v = bilinear(plane, height, width, y0 + dy[p], x0 + dx[p]);
              col[p] = m ? v * m[p] : v;
            }
          }
        });
        parallel_for(out_c, 1, [&](int64_t begin, int64_t end) {
          for (int64_t oc = begin; oc < end; ++oc) {
            Acc* dst = o + (n * out_c + oc) * pixels;
            std::fill(dst, dst + pixels, biases ? biases[oc] : Acc(0));
            const int64_t first_row = oc / out_per_group * in_per_group * taps;
            for (int64_t r = 0; r < in_per_group * taps; ++r) {
              const Acc wv = weights[oc * in_per_group * taps + r];
              const Acc* col = columns.data() + (first_row + r) * pixels;
              for (int64_t p = 0; p < pixels; ++p) dst[p] += wv * col[p];
            }
          }
        });
      }
      out.finish();
    });
  }

 private:
  std::vector<int64_t> dilations_, pads_, strides_, kernel_;
  int64_t group_, offset_group_;
};

}  // namespace

// Sums taps in the accumulation type (float for 16-bit inputs), whatever the GEMM setting says.
MPA_OP_TRAITS("", "DeformConv", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "DeformConv", DeformConvOp, 19, 22);

}  // namespace mpa
