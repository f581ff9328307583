// The signal-processing ops of opset 17 and 20: DFT (17, 20), STFT (17), the windows HannWindow,
// HammingWindow, BlackmanWindow (17) and MelWeightMatrix (17).
//
// Complex values are a trailing dimension of 2 (real, imaginary); a trailing 1 is a real signal. Transforms
// are the direct sums of src/kernels/dft.h in compute_t (float for float32/float16/bfloat16), one rounding
// per output. Windows and the mel matrix depend on integers only: computed in double, rounded once into
// output_datatype.
#include <cmath>

#include "common/error.h"
#include "kernels/dft.h"
#include "ops/compute_buffer.h"
#include "ops/op.h"
#include "ops/shape_helpers.h"

namespace mpa {
namespace {

// The element type of attribute 'output_datatype' (default float).
DType output_datatype(const OpInit& init) {
  const int64_t id = init.get_int("output_datatype", static_cast<int64_t>(DType::Float32));
  if (!dtype_is_supported(static_cast<int32_t>(id)) || id == static_cast<int64_t>(DType::Bool))
    throw UnsupportedType(init.node().label() + ": output_datatype " + onnx_type_name(static_cast<int32_t>(id)) +
                          " is not supported");
  return static_cast<DType>(id);
}

// Rounds double values once into a new output of any numeric type.
void write_doubles(KernelContext& ctx, DType dtype, const std::vector<double>& values, const Shape& shape) {
  Tensor& y = allocate_checked(ctx, 0, dtype, shape);
  visit_numeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = store<T>(static_cast<compute_t<T>>(values[i]));
  });
}

// [SECTION] Windows

// Generalised cosine windows a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N'), N' = size (periodic) or
// size - 1 (symmetric), as the ONNX reference and torch.*_window define them.
struct CosineWindow {
  double a0, a1, a2;
};
constexpr CosineWindow kHann{0.5, 0.5, 0.0};
constexpr CosineWindow kHamming{25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineWindow kBlackman{0.42, 0.5, 0.08};

template <const CosineWindow& W>
class WindowOp : public OpKernel {
 public:
  explicit WindowOp(const OpInit& init) : dtype_(output_datatype(init)), periodic_(init.get_int("periodic", 1) != 0) {}

  void compute(KernelContext& ctx) const override {
    const int64_t size = scalar_int(ctx.node(), ctx.input(0), "size");
    if (size < 0) fail(ctx.node().label() + ": size must be >= 0, got " + std::to_string(size));
    // A symmetric window of one sample divides 0 by 0 as the reference does (NaN).
    const double period = static_cast<double>(periodic_ ? size : size - 1);
    std::vector<double> w(static_cast<size_t>(size));
    for (int64_t n = 0; n < size; ++n) {
      const double phase = 2.0 * M_PI * static_cast<double>(n) / period;
      w[static_cast<size_t>(n)] = W.a0 - W.a1 * std::cos(phase) + W.a2 * std::cos(2.0 * phase);
    }
    write_doubles(ctx, dtype_, w, {size});
  }

 private:
  DType dtype_;
  bool periodic_;
};

using HannWindowOp = WindowOp<kHann>;
using HammingWindowOp = WindowOp<kHamming>;
using BlackmanWindowOp = WindowOp<kBlackman>;

// [SECTION] MelWeightMatrix

// [dft_length / 2 + 1, num_mel_bins] triangular filters spaced evenly on the mel scale between the edge
// frequencies, with the ONNX reference's bin arithmetic (num_mel_bins + 2 points, floor to integer bins).
class MelWeightMatrixOp : public OpKernel {
 public:
  explicit MelWeightMatrixOp(const OpInit& init) : dtype_(output_datatype(init)) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const std::string who = node.label();
    const int64_t mel_bins = scalar_int(node, ctx.input(0), "num_mel_bins");
    const int64_t dft_length = scalar_int(node, ctx.input(1), "dft_length");
    const int64_t sample_rate = scalar_int(node, ctx.input(2), "sample_rate");
    const double lower_hz = scalar_float(ctx.input(3), who, "lower_edge_hertz");
    const double upper_hz = scalar_float(ctx.input(4), who, "upper_edge_hertz");
    if (mel_bins < 0 || dft_length < 1 || sample_rate < 1)
      fail(who + ": needs num_mel_bins >= 0, dft_length >= 1 and sample_rate >= 1");
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    const auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double low_mel = mel(lower_hz);
    const double step = (mel(upper_hz) - low_mel) / static_cast<double>(mel_bins + 2);
    std::vector<int64_t> bin(static_cast<size_t>(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
      bin[static_cast<size_t>(i)] =
          static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
      if (bin[static_cast<size_t>(i)] < 0 || bin[static_cast<size_t>(i)] >= spectrogram_bins)
        fail(who + ": the edge frequencies map outside the " + std::to_string(spectrogram_bins) +
             " spectrogram bins (upper_edge_hertz above sample_rate / 2?)");
    }
    std::vector<double> w(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
    const auto at = [&](int64_t j, int64_t i) -> double& { return w[static_cast<size_t>(j * mel_bins + i)]; };
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t left = bin[static_cast<size_t>(i)], center = bin[static_cast<size_t>(i + 1)],
                    right = bin[static_cast<size_t>(i + 2)];
      if (center == left) at(center, i) = 1.0;
      for (int64_t j = left; center > left && j <= center; ++j)
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
      for (int64_t j = center; j < right; ++j)
        at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
    write_doubles(ctx, dtype_, w, {spectrogram_bins, mel_bins});
  }

 private:
  static double scalar_float(const Tensor& t, const std::string& who, const char* what) {
    if (t.numel() != 1 || !dtype_is_float(t.dtype())) fail(who + ": " + what + " must be a float scalar");
    return t.to_double_vector()[0];
  }
  DType dtype_;
};

// [SECTION] DFT and STFT

// Complex lines of a [outer, length, inner, channels] tensor (channels 1: real, 2: complex), gathered into
// contiguous compute_t buffers and scattered back, so that dft_line runs on unit strides for every layout.
struct LineLayout {
  int64_t outer = 1, length = 1, inner = 1, channels = 1;
  int64_t offset(int64_t line, int64_t j) const {
    return ((line / inner * length + j) * inner + line % inner) * channels;
  }
};

// Values [first, first + count) of a line.
template <class T, class A = compute_t<T>>
void gather_line(const T* x, const LineLayout& l, int64_t line, int64_t first, int64_t count, A* re, A* im) {
  for (int64_t j = 0; j < count; ++j) {
    const int64_t at = l.offset(line, first + j);
    re[j] = load(x[at]);
    im[j] = l.channels == 2 ? A(load(x[at + 1])) : A(0);
  }
}

template <class T, class A = compute_t<T>>
void scatter_line(const A* re, const A* im, const LineLayout& l, int64_t line, T* y) {
  for (int64_t k = 0; k < l.length; ++k) {
    const int64_t at = l.offset(line, k);
    y[at] = store<T>(re[k]);
    if (l.channels == 2) y[at + 1] = store<T>(im[k]);
  }
}

// The transform of one line of n complex values, the first `count` in (re, im) and the rest zero, into bins
// [0, bins) of (y_re, y_im). Complex input: numpy's FFT where its plan covers n, as the reference's float32
// transforms run; real input: the direct sum, since numpy transforms a real float32 signal in double (its
// zeros come out exact) and the direct sum is the closer of the two. work: 2n values.
template <class A>
struct LineTransform {
  LineTransform(int64_t n, bool inverse, bool complex_input)
      : n(n), inverse(inverse), plan(complex_input ? n : 0), tw(plan.supported() ? 0 : n) {}
  void operator()(const A* re, const A* im, int64_t count, int64_t bins, A scale, A* y_re, A* y_im,
                  Complex<A>* work) const {
    if (!plan.supported()) {
      dft_line(re, im, count, int64_t{1}, tw.cos.data(), tw.sin.data(), n, bins, inverse, scale, y_re, y_im,
               int64_t{1});
      return;
    }
    for (int64_t j = 0; j < n; ++j) work[j] = j < count ? Complex<A>{re[j], im[j]} : Complex<A>{A(0), A(0)};
    plan.run(work, work + n, !inverse, scale);
    for (int64_t k = 0; k < bins; ++k) {
      y_re[k] = work[k].r;
      y_im[k] = work[k].i;
    }
  }
  int64_t n;
  bool inverse;
  NumpyFftPlan<A> plan;
  Twiddles<A> tw;  // for the direct sum only
};

class DftOp : public OpKernel {
 public:
  explicit DftOp(const OpInit& init)
      : axis_input_(init.opset() >= 20),
        axis_attr_(init.get_int("axis", 1)),
        inverse_(init.get_int("inverse", 0) != 0),
        onesided_(init.get_int("onesided", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const std::string who = node.label();
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    if (rank < 2 || (x.shape().back() != 1 && x.shape().back() != 2))
      fail(who + ": input must be [..., signal, 1 or 2] (real or complex), got " + shape_str(x.shape()));
    int64_t axis = axis_attr_;
    if (axis_input_) axis = ctx.has_input(2) ? scalar_int(node, ctx.input(2), "axis") : -2;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank - 1)
      fail(who + ": axis must be in [-" + std::to_string(rank) + ", -2] or [0, " + std::to_string(rank - 2) +
           "] (not the last, complex dimension) for input " + shape_str(x.shape()));
    LineLayout in;
    in.length = x.shape()[static_cast<size_t>(axis)];
    in.channels = x.shape().back();
    for (int64_t d = 0; d < axis; ++d) in.outer *= x.shape()[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank - 1; ++d) in.inner *= x.shape()[static_cast<size_t>(d)];
    const bool real_inverse = inverse_ && onesided_;  // one-sided spectrum in, real signal out (irfft)
    const int64_t n = ctx.has_input(1) ? scalar_int(node, ctx.input(1), "dft_length")
                                       : (real_inverse ? 2 * (in.length - 1) : in.length);
    if (n < 1) fail(who + ": dft_length must be >= 1, got " + std::to_string(n));
    LineLayout out = in;
    out.length = onesided_ && !inverse_ ? n / 2 + 1 : n;
    out.channels = real_inverse ? 1 : 2;
    Shape out_shape = x.shape();
    out_shape[static_cast<size_t>(axis)] = out.length;
    out_shape.back() = out.channels;
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), out_shape);
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const A scale = inverse_ ? A(1) / static_cast<A>(n) : A(1);
      const LineTransform<A> transform(n, inverse_, in.channels == 2);
      const Twiddles<A> irfft_tw(real_inverse ? n : 0);
      // Input values a line reads: the irfft takes bins [0, n/2] and mirrors them, the others at most n.
      const int64_t count = std::min(in.length, real_inverse ? n / 2 + 1 : n);
      const T* xs = x.data<T>();
      T* ys = y.data<T>();
      parallel_for(in.outer * in.inner, std::max<int64_t>(1, 4096 / n / n), [&](int64_t b, int64_t e) {
        A* re = scratch<A>(0, static_cast<size_t>(4 * n));
        A* im = re + n;
        A* y_re = im + n;
        A* y_im = y_re + n;
        Complex<A>* work = scratch<Complex<A>>(1, static_cast<size_t>(2 * n));
        for (int64_t line = b; line < e; ++line) {
          gather_line(xs, in, line, int64_t{0}, count, re, im);
          if (real_inverse) {
            // Hermitian extension X[n - k] = conj(X[k]); bins the input lacks are zero. numpy's inverse real
            // FFT runs another algorithm than its complex one: the direct sum stands for it.
            for (int64_t k = count; k <= n / 2; ++k) re[k] = im[k] = A(0);
            for (int64_t k = n / 2 + 1; k < n; ++k) {
              re[k] = re[n - k];
              im[k] = -im[n - k];
            }
            dft_line(re, im, n, int64_t{1}, irfft_tw.cos.data(), irfft_tw.sin.data(), n, out.length, true, scale, y_re,
                     y_im, int64_t{1});
          } else {
            transform(re, im, count, out.length, scale, y_re, y_im, work);
          }
          scatter_line(y_re, y_im, out, line, ys);
        }
      });
    });
  }

 private:
  bool axis_input_;  // opset 20: axis is input 2 (default -2); before, attribute 'axis' (default 1)
  int64_t axis_attr_;
  bool inverse_, onesided_;
};

// STFT: signal [batch, length, 1 or 2], frame_step, optional window [frame_length], optional frame_length;
// output [batch, frames, bins, 2] with frames = 1 + (length - frame_length) / frame_step and bins =
// frame_length / 2 + 1 when onesided (the default), else frame_length.
class StftOp : public OpKernel {
 public:
  explicit StftOp(const OpInit& init) : onesided_(init.get_int("onesided", 1) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const std::string who = node.label();
    const Tensor& x = ctx.input(0);
    if (x.rank() != 3 || (x.shape()[2] != 1 && x.shape()[2] != 2))
      fail(who + ": signal must be [batch, length, 1 or 2], got " + shape_str(x.shape()));
    const int64_t step = scalar_int(node, ctx.input(1), "frame_step");
    const Tensor* window = ctx.optional_input(2);
    if (window && (window->rank() != 1 || window->dtype() != x.dtype()))
      fail(who + ": window must be a 1-D tensor of the signal's type");
    int64_t frame = window ? window->shape()[0] : x.shape()[1];
    if (ctx.has_input(3)) {
      frame = scalar_int(node, ctx.input(3), "frame_length");
      if (window && window->shape()[0] != frame)
        fail(who + ": frame_length " + std::to_string(frame) + " differs from the window's length " +
             std::to_string(window->shape()[0]));
    }
    const int64_t batch = x.shape()[0], length = x.shape()[1];
    if (step < 1 || frame < 1 || frame > length)
      fail(who + ": needs frame_step >= 1 and 1 <= frame_length <= signal length, got frame_step " +
           std::to_string(step) + ", frame_length " + std::to_string(frame) + ", length " + std::to_string(length));
    const int64_t frames = 1 + (length - frame) / step;
    LineLayout in{batch, length, 1, x.shape()[2]};
    LineLayout out{batch * frames, onesided_ ? frame / 2 + 1 : frame, 1, 2};
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), {batch, frames, out.length, 2});
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const LineTransform<A> transform(frame, false, in.channels == 2);
      const T* xs = x.data<T>();
      const T* ws = window ? window->data<T>() : nullptr;
      T* ys = y.data<T>();
      parallel_for(batch * frames, std::max<int64_t>(1, 4096 / frame / frame), [&](int64_t b, int64_t e) {
        A* re = scratch<A>(0, static_cast<size_t>(4 * frame));
        A* im = re + frame;
        A* y_re = im + frame;
        A* y_im = y_re + frame;
        Complex<A>* work = scratch<Complex<A>>(1, static_cast<size_t>(2 * frame));
        for (int64_t line = b; line < e; ++line) {
          gather_line(xs, in, line / frames, (line % frames) * step, frame, re, im);
          for (int64_t j = 0; ws && j < frame; ++j) {
            re[j] *= static_cast<A>(load(ws[j]));
            im[j] *= static_cast<A>(load(ws[j]));
          }
          transform(re, im, frame, out.length, A(1), y_re, y_im, work);
          scatter_line(y_re, y_im, out, line, ys);
        }
      });
    });
  }

 private:
  bool onesided_;
};

}  // namespace

MPA_OP_TRAITS("", "HannWindow", {.precision = PrecisionClass::Transcendental, .host_inputs = {0}});
MPA_REGISTER_OP("", "HannWindow", HannWindowOp, 17);
MPA_OP_TRAITS("", "HammingWindow", {.precision = PrecisionClass::Transcendental, .host_inputs = {0}});
MPA_REGISTER_OP("", "HammingWindow", HammingWindowOp, 17);
MPA_OP_TRAITS("", "BlackmanWindow", {.precision = PrecisionClass::Transcendental, .host_inputs = {0}});
MPA_REGISTER_OP("", "BlackmanWindow", BlackmanWindowOp, 17);
MPA_OP_TRAITS("", "MelWeightMatrix", {.precision = PrecisionClass::Transcendental, .host_inputs = {0, 1, 2, 3, 4}});
MPA_REGISTER_OP("", "MelWeightMatrix", MelWeightMatrixOp, 17);
// The transforms' sums run in FP32 for every float storage format, as the reductions': the audit models a
// float transform (cuFFT's single-precision plans); cuFFT's half-precision plans, which sum in half, are not
// modelled.
MPA_OP_TRAITS("", "DFT", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1, 2}});
MPA_REGISTER_OP("", "DFT", DftOp, 17, 20);
MPA_OP_TRAITS("", "STFT", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1, 3}});
MPA_REGISTER_OP("", "STFT", StftOp, 17);

}  // namespace mpa
