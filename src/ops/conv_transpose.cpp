// ConvTranspose: per image and group, col = W_g^T * X_g by GEMM ([Cout_g * kernel, in] values), then
// col2im scatters every column into the output, parallel over output channels (no write races).
// Output size, output_padding, output_shape and auto_pad come from conv_geometry.
#include "backends/cpu/gemm.h"
#include "ops/compute_buffer.h"
#include "ops/conv_geometry.h"
#include "ops/op.h"

namespace mpa {

namespace {

template <class Acc>
void col2im(const Acc* col, const WindowGeometry& g, int64_t channels, Acc* y) {
  const size_t nd = g.rank();
  const int64_t ksize = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  const int64_t s = g.stride[nd - 1];
  parallel_for(channels, 1, [&](int64_t begin, int64_t end) {
    int64_t offset[8];
    for (int64_t m = begin; m < end; ++m) {
      Acc* ym = y + m * out_size;
      for (int64_t k = 0; k < ksize; ++k) {
        for (int64_t kk = k, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
          offset[d] = (kk % g.kernel[d]) * g.dilation[d] - g.pad_begin[d];
          kk /= g.kernel[d];
        }
        const Acc* row = col + (m * ksize + k) * in_size;
        for_each_window_row(nd, g.in.data(), g.out.data(), g.stride.data(), offset,
                            [&](int64_t from_row, int64_t to_row, int64_t lo, int64_t hi, int64_t off) {
                              if (to_row < 0) return;
                              const Acc* src = row + from_row;
                              Acc* dst = ym + to_row + off;
                              for (int64_t p = lo; p < hi; ++p) dst[p * s] += src[p];
                            });
      }
    }
  });
}

class ConvTransposeOp : public OpKernel {
 public:
  explicit ConvTransposeOp(const OpInit& init) : attrs_(TransposedConvAttrs::read(init)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor &x = ctx.input(0), &w = ctx.input(1), *b = ctx.optional_input(2);
    const TransposedConv shape = transposed_conv(ctx.node().label(), attrs_, x, w, b);
    const WindowGeometry& g = shape.g;
    Tensor& y = ctx.allocate_output(0, x.dtype(), shape.out_shape);
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      run<T>(x, w, b, y, g, gemm_math(ctx.config(), x.dtype()));
    });
  }

 private:
  template <class T>
  void run(const Tensor& xt, const Tensor& wt, const Tensor* bt, Tensor& yt, const WindowGeometry& g,
           const cpu::GemmMath& math) const {
    using Acc = acc_t<T>;
    std::vector<Acc> xh, wh, bh;
    const Acc* x = as_acc<T>(xt, xh);
    const Acc* w = as_acc<T>(wt, wh);
    const Acc* bias = bt ? as_acc<T>(*bt, bh) : nullptr;
    AccOutput<T> out(yt);
    Acc* y = out.data();
    const int64_t batch = xt.dim(0), channels = xt.dim(1), cg = channels / attrs_.group, mg = wt.dim(1);
    const int64_t out_channels = mg * attrs_.group, ksize = g.kernel_size(), in_size = g.in_size(),
                  out_size = g.out_size();
    if (yt.numel() == 0) return out.finish();
    Acc* col = scratch<Acc>(0, static_cast<size_t>(mg * ksize * in_size));
    for (int64_t n = 0; n < batch; ++n) {
      Acc* yn = y + n * out_channels * out_size;
      parallel_for(out_channels, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t m = lo; m < hi; ++m)
          std::fill(yn + m * out_size, yn + (m + 1) * out_size, bias ? bias[m] : Acc(0));
      });
      for (int64_t gi = 0; gi < attrs_.group; ++gi) {
        cpu::gemm(true, false, mg * ksize, in_size, cg, Acc(1), w + gi * cg * mg * ksize, mg * ksize,
                  x + (n * channels + gi * cg) * in_size, in_size, Acc(0), col, in_size, math);
        col2im(col, g, mg, yn + gi * mg * out_size);
      }
    }
    out.finish();
  }

  TransposedConvAttrs attrs_;
};

}  // namespace

MPA_OP_TRAITS("", "ConvTranspose", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "ConvTranspose", ConvTransposeOp, 1, 11, 22);

}  // namespace mpa
