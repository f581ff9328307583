// Conv (1-D/2-D/3-D..., groups, dilations, strides, pads, auto_pad).
// Paths: 1x1 stride-1 unpadded = one GEMM per image and group straight on the input; depthwise (one input
// channel per group) = direct loop parallel over image x channel; otherwise im2col + GEMM per band of output
// rows and group (bands on threads of their own where there are several per thread, else each band's im2col
// and GEMM split over the threads). Bias is written into the output first and the GEMM accumulates onto it
// (beta = 1), except under the ort-cuda profile in fp16, where it is added after rounding
// (ort_cuda_add_bias_after_rounding). The executor's epilogues (ops/op.h) run on each GEMM block or depthwise
// plane as it is done.
#include <algorithm>
#include <functional>

#include "backends/cpu/gemm.h"
#include "common/compiler.h"
#include "ops/compute_buffer.h"
#include "ops/conv_geometry.h"

namespace mpa {

namespace {

// Rows [begin, end) of im2col_2d's column matrix: one pass per (channel, ky, kx) over the band's output rows,
// column ranges per kx precomputed, element loops instead of memcpy/memset calls (rows are often a few dozen
// floats, where the library calls cost more than the copy).
template <class Acc>
MPA_VECTOR_CLONES MPA_GCC_OPTIMIZE("no-tree-loop-distribute-patterns") void im2col_rows_2d(
    const Acc* x, const WindowGeometry& g, Acc* col, int64_t row_begin, int64_t row_end, int64_t begin, int64_t end) {
  const int64_t H = g.in[0], W = g.in[1], OW = g.out[1], KH = g.kernel[0], KW = g.kernel[1];
  const int64_t sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
  const int64_t band = (row_end - row_begin) * OW;
  // With unit strides and an input row as wide as an output row ("same" padding), consecutive output rows read
  // consecutive input rows at the same shift: the band's rows that lie in the input are one contiguous copy,
  // after which each row's padded ends are zeroed (the copy put the neighbouring rows' values there).
  const bool contiguous_rows = sw == 1 && sh == 1 && W == OW;
  // Each kx's output columns [lo, hi) whose taps land in the input row.
  int64_t* columns = scratch<int64_t>(0, static_cast<size_t>(2 * KW));
  for (int64_t kx = 0; kx < KW; ++kx) {
    const int64_t shift = kx * dw - g.pad_begin[1];
    const int64_t lo = std::min(OW, shift >= 0 ? int64_t{0} : (-shift + sw - 1) / sw);
    columns[2 * kx] = lo;
    columns[2 * kx + 1] = std::max(lo, std::min(OW, W - 1 - shift < 0 ? int64_t{0} : (W - 1 - shift) / sw + 1));
  }
  // Row r's (c, ky, kx), advanced with r: three divisions per row cost more than a short row's copy.
  int64_t c = begin / (KH * KW), ky = begin / KW % KH, kx = begin % KW - 1;
  for (int64_t r = begin; r < end; ++r) {
    if (++kx == KW) {
      kx = 0;
      if (++ky == KH) ky = 0, ++c;
    }
    const int64_t shift = kx * dw - g.pad_begin[1], lo = columns[2 * kx], hi = columns[2 * kx + 1];
    Acc* dst = col + r * band;
    if (contiguous_rows) {
      const int64_t row_shift = ky * dh - g.pad_begin[0];  // iy = oy + row_shift
      const int64_t inside_begin = std::clamp(-row_shift, row_begin, row_end),
                    inside_end = std::clamp(H - row_shift, inside_begin, row_end);
      Acc* inside = dst + (inside_begin - row_begin) * OW;
      Acc* after = dst + (inside_end - row_begin) * OW;
      for (Acc* p = dst; p < inside; ++p) *p = Acc(0);
      if (inside < after && lo < hi) {
        // From the first row's first value in the input to the last row's last one: no read leaves the plane.
        const Acc* src = x + (c * H + inside_begin + row_shift) * W + shift;
        std::copy(src + lo, src + (inside_end - inside_begin - 1) * OW + hi, inside + lo);
      }
      for (Acc* row = inside; row < after; row += OW) {
        for (int64_t ox = 0; ox < lo; ++ox) row[ox] = Acc(0);
        for (int64_t ox = hi; ox < OW; ++ox) row[ox] = Acc(0);
      }
      for (Acc* p = after; p < dst + band; ++p) *p = Acc(0);
      continue;
    }
    for (int64_t oy = row_begin; oy < row_end; ++oy, dst += OW) {
      const int64_t iy = oy * sh - g.pad_begin[0] + ky * dh;
      if (iy < 0 || iy >= H) {
        for (int64_t ox = 0; ox < OW; ++ox) dst[ox] = Acc(0);
        continue;
      }
      const Acc* src = x + (c * H + iy) * W + shift;
      for (int64_t ox = 0; ox < lo; ++ox) dst[ox] = Acc(0);
      if (sw == 1) {
        for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox];
      } else {
        for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * sw];
      }
      for (int64_t ox = hi; ox < OW; ++ox) dst[ox] = Acc(0);
    }
  }
}

// im2col for 2-D windows, parallel over the column matrix's rows.
template <class Acc>
void im2col_2d(const Acc* x, const WindowGeometry& g, int64_t channels, Acc* col, int64_t row_begin, int64_t row_end) {
  const int64_t band = (row_end - row_begin) * g.out[1];
  parallel_for(channels * g.kernel[0] * g.kernel[1], std::max<int64_t>(1, 4096 / std::max<int64_t>(band, 1)),
               [&](int64_t begin, int64_t end) { im2col_rows_2d(x, g, col, row_begin, row_end, begin, end); });
}

// col[r, p] for r = (c, kernel index), p = output position in the band of output rows [row_begin,
// row_end) (rows: the output's positions with the last spatial dim fixed): the input element the window
// reads, or 0 in the padding. x is one image's group slice [Cg, in...].
template <class Acc>
void im2col(const Acc* x, const WindowGeometry& g, int64_t channels, Acc* col, int64_t row_begin, int64_t row_end) {
  const size_t nd = g.rank();
  if (nd == 2) return im2col_2d(x, g, channels, col, row_begin, row_end);
  const int64_t ksize = g.kernel_size(), in_size = g.in_size(), out_size = (row_end - row_begin) * g.out[nd - 1];
  parallel_for(channels * ksize, std::max<int64_t>(1, 4096 / std::max<int64_t>(out_size, 1)),
                    [&](int64_t begin, int64_t end) {
                      int64_t offset[8];
                      for (int64_t r = begin; r < end; ++r) {
                        const Acc* xc = x + (r / ksize) * in_size;
                        for (int64_t k = r % ksize, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
                          offset[d] = (k % g.kernel[d]) * g.dilation[d] - g.pad_begin[d];
                          k /= g.kernel[d];
                        }
                        Acc* dst = col + r * out_size;
                        const int64_t s = g.stride[nd - 1];
                        for_each_window_row(
                            nd, g.out.data(), g.in.data(), g.stride.data(), offset,
                            [&](int64_t from_row, int64_t to_row, int64_t lo, int64_t hi, int64_t off) {
                              Acc* out = dst + from_row;
                              const int64_t n = g.out[nd - 1];
                              if (to_row < 0) {
                                std::fill(out, out + n, Acc(0));
                                return;
                              }
                              std::fill(out, out + lo, Acc(0));
                              const Acc* src = xc + to_row + off;
                              if (s == 1) {
                                std::copy(src + lo, src + hi, out + lo);
                              } else {
                                for (int64_t p = lo; p < hi; ++p) out[p] = src[p * s];
                              }
                              std::fill(out + hi, out + n, Acc(0));
                            },
                            row_begin, row_end);
                      }
                    });
}

// im2col works in bands of output rows holding at most this many bytes, so the column matrix of a large
// feature map (64 channels x 3x3 x 224x224 would take 115 MB) stays near L2 size: less memory, and 1.5x
// faster on super-resolution-10 than unbanded (1 to 4 MB measured alike).
inline constexpr int64_t kIm2colBandBytes = int64_t{2} << 20;

// Adds the taps of one kernel row onto an output row: o[ox] += w[kx] * tap[kx][ox] for every kx whose tap lands
// in the input (ox in [lo[kx], hi[kx])), in kx order for each output, as adding one tap after the other over
// the whole row would (the same roundings). The outputs every tap reaches take them in one loop, with the
// running sum in a register; the few at the row's ends, tap by tap.
template <class Acc, int KW>
void add_kernel_row(Acc* __restrict o, const Acc* const* tap, const Acc* w, const int64_t* lo, const int64_t* hi) {
  int64_t inner_lo = 0, inner_hi = INT64_MAX;
  for (int kx = 0; kx < KW; ++kx) inner_lo = std::max(inner_lo, lo[kx]), inner_hi = std::min(inner_hi, hi[kx]);
  inner_hi = std::max(inner_hi, inner_lo);
  for (int kx = 0; kx < KW; ++kx)
    for (int64_t ox = lo[kx]; ox < std::min(hi[kx], inner_lo); ++ox) o[ox] += w[kx] * tap[kx][ox];
  const Acc* __restrict t[KW];
  for (int kx = 0; kx < KW; ++kx) t[kx] = tap[kx];
  for (int64_t ox = inner_lo; ox < inner_hi; ++ox) {
    Acc sum = o[ox];
    for (int kx = 0; kx < KW; ++kx) sum += w[kx] * t[kx][ox];
    o[ox] = sum;
  }
  for (int kx = 0; kx < KW; ++kx)
    for (int64_t ox = std::max(lo[kx], inner_hi); ox < hi[kx]; ++ox) o[ox] += w[kx] * tap[kx][ox];
}

// One 2-D depthwise plane, output row by output row (the row stays in L1 while each kernel row's taps add
// shifted input rows onto it), tap ranges per column precomputed. With stride 2 each input row is split
// into its even and odd columns first, so that every tap reads a contiguous run (the loops vectorise).
template <class Acc>
MPA_VECTOR_CLONES void depthwise_plane_2d(const Acc* xc, const Acc* wm, Acc bias, Acc* out, const WindowGeometry& g) {
  const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1], KH = g.kernel[0], KW = g.kernel[1];
  const int64_t sh = g.stride[0], sw = g.stride[1], dh = g.dilation[0], dw = g.dilation[1];
  int64_t ox_lo[64], ox_hi[64], shift[64];  // per kx: outputs whose tap lands inside the row
  for (int64_t kx = 0; kx < KW; ++kx) {
    shift[kx] = kx * dw - g.pad_begin[1];
    ox_lo[kx] = shift[kx] >= 0 ? 0 : (-shift[kx] + sw - 1) / sw;
    ox_hi[kx] = std::min(OW, W - 1 - shift[kx] < 0 ? int64_t{0} : (W - 1 - shift[kx]) / sw + 1);
  }
  thread_local std::vector<Acc> columns;  // stride 2: the row's even columns, then its odd ones
  if (sw == 2) columns.resize(static_cast<size_t>(W + 1));
  const Acc* tap[64];
  for (int64_t oy = 0; oy < OH; ++oy) {
    Acc* o = out + oy * OW;
    std::fill(o, o + OW, bias);
    for (int64_t ky = 0; ky < KH; ++ky) {
      const int64_t iy = oy * sh - g.pad_begin[0] + ky * dh;
      if (iy < 0 || iy >= H) continue;
      const Acc* row = xc + iy * W;
      const Acc* w = wm + ky * KW;
      if (sw > 2) {
        for (int64_t kx = 0; kx < KW; ++kx)
          for (int64_t ox = ox_lo[kx]; ox < ox_hi[kx]; ++ox) o[ox] += w[kx] * row[ox * sw + shift[kx]];
        continue;
      }
      if (sw == 1) {
        for (int64_t kx = 0; kx < KW; ++kx) tap[kx] = row + shift[kx];
      } else {
        const int64_t evens = (W + 1) / 2;
        Acc* split = columns.data();
        for (int64_t j = 0; j < evens; ++j) split[j] = row[2 * j];
        for (int64_t j = 0; j < W / 2; ++j) split[evens + j] = row[2 * j + 1];
        // Column 2 ox + shift: the odd ones' run when shift is odd, from floor(shift / 2) on.
        for (int64_t kx = 0; kx < KW; ++kx)
          tap[kx] = split + (shift[kx] & 1) * evens + (shift[kx] - (shift[kx] & 1)) / 2;
      }
      if (KW == 3)
        add_kernel_row<Acc, 3>(o, tap, w, ox_lo, ox_hi);
      else if (KW == 5)  // MobileNetV3's and EfficientNet's other kernel sizes
        add_kernel_row<Acc, 5>(o, tap, w, ox_lo, ox_hi);
      else if (KW == 7)
        add_kernel_row<Acc, 7>(o, tap, w, ox_lo, ox_hi);
      else
        for (int64_t kx = 0; kx < KW; ++kx)
          for (int64_t ox = ox_lo[kx]; ox < ox_hi[kx]; ++ox) o[ox] += w[kx] * tap[kx][ox];
    }
  }
}

// Depthwise: each output channel reads exactly one input channel. `plane_done(plane)`, where given, runs on
// the thread that computed output plane (n * out_channels + m), right after it.
template <class Acc>
void depthwise(const Acc* x, const Acc* w, const Acc* bias, Acc* y, int64_t batch, int64_t in_channels,
               int64_t out_channels, const WindowGeometry& g, const std::function<void(int64_t)>& plane_done) {
  const size_t nd = g.rank();
  if (nd == 2 && g.kernel[1] <= 64) {
    const int64_t multiplier = out_channels / in_channels, in_size = g.in_size(), out_size = g.out_size();
    parallel_for(batch * out_channels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t n = plane / out_channels, m = plane % out_channels;
        depthwise_plane_2d(x + (n * in_channels + m / multiplier) * in_size, w + m * g.kernel_size(),
                           bias ? bias[m] : Acc(0), y + plane * out_size, g);
        if (plane_done) plane_done(plane);
      }
    });
    return;
  }
  const int64_t ksize = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  const int64_t multiplier = out_channels / in_channels;
  parallel_for(batch * out_channels, 1, [&](int64_t begin, int64_t end) {
    int64_t offset[8];
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / out_channels, m = plane % out_channels;
      const Acc* xc = x + (n * in_channels + m / multiplier) * in_size;
      const Acc* wm = w + m * ksize;
      Acc* out = y + plane * out_size;
      std::fill(out, out + out_size, bias ? bias[m] : Acc(0));
      const int64_t s = g.stride[nd - 1], row_len = g.out[nd - 1];
      for (int64_t k = 0; k < ksize; ++k) {
        for (int64_t kk = k, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
          offset[d] = (kk % g.kernel[d]) * g.dilation[d] - g.pad_begin[d];
          kk /= g.kernel[d];
        }
        const Acc wk = wm[k];
        for_each_window_row(nd, g.out.data(), g.in.data(), g.stride.data(), offset,
                            [&](int64_t from_row, int64_t to_row, int64_t lo, int64_t hi, int64_t off) {
                              if (to_row < 0) return;
                              Acc* o = out + from_row;
                              const Acc* src = xc + to_row + off;
                              if (s == 1) {
                                for (int64_t p = lo; p < hi; ++p) o[p] += wk * src[p];
                              } else {
                                for (int64_t p = lo; p < hi; ++p) o[p] += wk * src[p * s];
                              }
                              (void)row_len;
                            });
      }
      if (plane_done) plane_done(plane);
    }
  });
}

// Fills rows x row_len of y with bias[row] (the GEMM then accumulates onto it).
template <class Acc>
void fill_bias_rows(Acc* y, const Acc* bias, int64_t rows, int64_t row_len) {
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(row_len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::fill(y + r * row_len, y + (r + 1) * row_len, bias[r]);
  });
}

// ORT CUDA EP rule (docs/numerics.md, "Conv fp16 (cuDNN)"): cuDNN writes the convolution (fp32 accumulation)
// to the fp16 output, and ORT adds the bias with a separate cudnnAddTensor: RN16(RN16(conv) + bias) instead
// of one rounding of conv + bias. y holds the convolution without bias, in planes of plane_size per channel;
// the executor (or the fp16 output) does the last rounding.
void ort_cuda_add_bias_after_rounding(float* y, const float* bias, int64_t batch, int64_t channels,
                                      int64_t plane_size) {
  parallel_for(batch * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_size, 1)),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t plane = begin; plane < end; ++plane) {
                        float* p = y + plane * plane_size;
                        round_to_format(Format::FP16, p, plane_size);
                        const float b = bias[plane % channels];
                        for (int64_t i = 0; i < plane_size; ++i) p[i] += b;
                      }
                    });
}

// Runs `epilogues` on places [begin, end) of channel c of image n of y (planes of plane_size).
void run_epilogues(const std::vector<const Epilogue*>& epilogues, float* y, int64_t n, int64_t channels, int64_t c,
                   int64_t plane_size, int64_t begin, int64_t end) {
  const int64_t offset = (n * channels + c) * plane_size + begin;
  for (const Epilogue* e : epilogues) e->apply(y + offset, end - begin, c, offset);
}

class ConvOp : public OpKernel {
 public:
  explicit ConvOp(const OpInit& init) : attrs_(WindowAttrs::read(init)), group_(init.get_int("group", 1)) {}

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.optional_input(2);
    if (!(x.rank() >= 3)) fail(label + ": input X has shape " + shape_str(x.shape()) + ", needs N x C x spatial");
    if (!(w.rank() == x.rank()))
      fail(label + ": weight W has shape " + shape_str(w.shape()) + ", input X " + shape_str(x.shape()));
    if (!(w.dtype() == x.dtype())) fail(label + ": W is " + dtype_name(w.dtype()) + ", X is " + dtype_name(x.dtype()));
    if (!(group_ > 0)) fail(label + ": group " + std::to_string(group_) + " must be positive");
    const int64_t batch = x.dim(0), channels = x.dim(1), out_channels = w.dim(0), cg = w.dim(1);
    if (!(channels == cg * group_))
      fail(label + ": input has " + std::to_string(channels) + " channels, W expects " + std::to_string(cg) +
           " x group " + std::to_string(group_));
    if (!(out_channels % group_ == 0))
      fail(label + ": " + std::to_string(out_channels) + " output channels not divisible by group " +
           std::to_string(group_));
    if (b) {
      if (!(b->rank() == 1 && b->dim(0) == out_channels))
        fail(label + ": bias B has shape " + shape_str(b->shape()) + ", expected " + std::to_string(out_channels));
      if (!(b->dtype() == x.dtype()))
        fail(label + ": B is " + dtype_name(b->dtype()) + ", X is " + dtype_name(x.dtype()));
    }
    const Shape in_spatial(x.shape().begin() + 2, x.shape().end());
    const Shape kernel(w.shape().begin() + 2, w.shape().end());
    WindowGeometry g = window_geometry(label, attrs_, in_spatial, kernel);
    Shape out_shape{batch, out_channels};
    out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
    // A 1-D convolution runs as 2-D windows over an input of height 1 (the 2-D kernels serve it).
    if (g.rank() == 1) g = g.as_2d();
    const std::vector<const Epilogue*>* epilogues = ctx.epilogue_source() && x.dtype() == DType::Float32
                                                        ? &ctx.epilogue_source()->epilogues_for(out_shape)
                                                        : nullptr;
    if (epilogues && epilogues->empty()) epilogues = nullptr;
    Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      run<T>(x, w, b, y, g, ctx.config(), epilogues);
    });
  }
  bool takes_epilogues() const override { return true; }

 private:
  template <class T>
  void run(const Tensor& xt, const Tensor& wt, const Tensor* bt, Tensor& yt, const WindowGeometry& g,
           const ExecConfig& config, const std::vector<const Epilogue*>* epilogues) const {
    using Acc = acc_t<T>;
    std::vector<Acc> xh, wh, bh;
    const Acc* x = as_acc<T>(xt, xh);
    const Acc* w = as_acc<T>(wt, wh);
    const Acc* given_bias = bt ? as_acc<T>(*bt, bh) : nullptr;
    const cpu::GemmMath math = gemm_math(config, xt.dtype());
    bool bias_after_rounding = false;
    if constexpr (std::is_same_v<Acc, float>)
      bias_after_rounding = given_bias && ort_cuda_fp16_rules(config, xt.dtype());
    const Acc* bias = bias_after_rounding ? nullptr : given_bias;  // the bias fused into the convolution
    AccOutput<T> out(yt);
    Acc* y = out.data();
    const int64_t batch = xt.dim(0), channels = xt.dim(1), out_channels = wt.dim(0), cg = wt.dim(1);
    const int64_t mg = out_channels / group_, ksize = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size(),
                  kdim = cg * ksize;
    if (yt.numel() == 0) return out.finish();
    // The epilogues run on each GEMM block or depthwise plane as it is done, or, where the bias is added after
    // rounding or there is no input channel, over the whole output at the end.
    const bool epilogues_in_blocks = epilogues && !bias_after_rounding;
    bool epilogues_done = false;
    const auto plane_epilogues = [&](int64_t plane) {
      if constexpr (std::is_same_v<T, float>)
        run_epilogues(*epilogues, y, plane / out_channels, out_channels, plane % out_channels, out_size, 0, out_size);
    };
    auto finish = [&] {
      if constexpr (std::is_same_v<Acc, float>)  // (with no input channel, the output is the bias, filled below)
        if (bias_after_rounding && kdim > 0)
          ort_cuda_add_bias_after_rounding(y, given_bias, batch, out_channels, out_size);
      if (epilogues && !epilogues_done)
        parallel_for(batch * out_channels, std::max<int64_t>(1, 16384 / out_size), [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane) plane_epilogues(plane);
        });
      out.finish();
    };
    if (kdim == 0) {  // no input channel: each output is its bias, a sum over nothing otherwise
      for (int64_t n = 0; n < batch; ++n) {
        Acc* yn = y + n * out_channels * out_size;
        if (given_bias)
          fill_bias_rows(yn, given_bias, out_channels, out_size);
        else
          std::fill(yn, yn + out_channels * out_size, Acc(0));
      }
      return finish();
    }
    // A single input channel with several filters (group 1) is an ordinary convolution: the GEMM path is
    // faster there and applies the GEMM math (TF32, fp16 accumulation) as a GPU would.
    if (cg == 1 && group_ == channels && group_ > 1) {
      depthwise(x, w, bias, y, batch, channels, out_channels, g,
                epilogues_in_blocks ? std::function<void(int64_t)>(plane_epilogues) : nullptr);
      epilogues_done = epilogues_in_blocks;
      return finish();
    }
    bool pointwise = true;
    for (size_t d = 0; d < g.rank(); ++d)
      pointwise = pointwise && g.kernel[d] == 1 && g.stride[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
    const int64_t row_len = g.out[g.rank() - 1], rows = out_size / row_len;
    const int64_t band_rows =
        pointwise ? rows : std::clamp<int64_t>(kIm2colBandBytes / int64_t(sizeof(Acc)) / (kdim * row_len), 1, rows);
    const int64_t bands = (rows + band_rows - 1) / band_rows;
    // One band of output rows of image n, group gi: its columns (im2col) and its GEMM, whose blocks the
    // epilogues finish as each is done.
    auto run_band = [&](int64_t n, int64_t gi, int64_t row) {
      Acc* col = pointwise ? nullptr : scratch<Acc>(0, static_cast<size_t>(kdim * band_rows * row_len));
      Acc* yn = y + n * out_channels * out_size;
      const Acc* xg = x + (n * channels + gi * cg) * in_size;
      const int64_t band = std::min(band_rows, rows - row) * row_len, first = row * row_len;
      if (!pointwise) im2col(xg, g, cg, col, row, row + band / row_len);
      cpu::GemmBlockDone done;
      if constexpr (std::is_same_v<T, float>)
        if (epilogues_in_blocks)
          done = [&](int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end) {
            for (int64_t m = m_begin; m < m_end; ++m)
              run_epilogues(*epilogues, y, n, out_channels, gi * mg + m, out_size, first + n_begin, first + n_end);
          };
      cpu::gemm(false, false, mg, band, kdim, Acc(1), w + gi * mg * kdim, kdim, pointwise ? xg : col,
                pointwise ? out_size : band, bias ? Acc(1) : Acc(0), yn + gi * mg * out_size + first, out_size, math,
                done);
    };
    if (bias)
      for (int64_t n = 0; n < batch; ++n) fill_bias_rows(y + n * out_channels * out_size, bias, out_channels, out_size);
    // Bands run on threads of their own where there are several per thread: each thread's columns stay in its
    // cache, and im2col and the GEMM need no barrier between them (the GEMM's blocks, which fix its summation
    // order, are the same: a nested loop runs them one after the other). Otherwise each band's im2col and GEMM
    // are split over the threads.
    const int64_t items = batch * group_ * bands;
    const auto run_items = [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item)
        run_band(item / (group_ * bands), item / bands % group_, item % bands * band_rows);
    };
    if (items >= 2 * int64_t{num_threads()})
      parallel_for(items, 1, run_items);
    else
      run_items(0, items);
    epilogues_done = epilogues_in_blocks;
    finish();
  }

  WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

MPA_OP_TRAITS("", "Conv", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "Conv", ConvOp, 1, 11, 22);

}  // namespace mpa
