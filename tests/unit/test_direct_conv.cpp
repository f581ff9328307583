// Plain fp32 2-D convolutions whose weights are initializers run through oneDNN's direct convolution
// (backends/cpu/direct_conv.h) where the build has it, with the weights reordered once per session: against a
// naive convolution in double, over geometries with strides, dilations, asymmetric and automatic pads, batches
// and odd channel counts; and the cases that must keep the im2col + GEMM path (weights that a feed overrides,
// fp16 accumulation) keep it.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/direct_conv.h"
#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"
#include "support/random_values.h"
#include "tensor/formats.h"

using namespace mpa;
using mpa::test::ModelBuilder;
using mpa::test::random_values;

namespace {

struct Geometry {
  int64_t batch, in_channels, out_channels, h, w, kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> pads;  // top, left, bottom, right
  bool bias;
  int64_t out_h() const { return (h + pads[0] + pads[2] - dh * (kh - 1) - 1) / sh + 1; }
  int64_t out_w() const { return (w + pads[1] + pads[3] - dw * (kw - 1) - 1) / sw + 1; }
  std::string name() const {
    return std::to_string(batch) + "x" + std::to_string(in_channels) + "x" + std::to_string(h) + "x" +
           std::to_string(w) + " -> " + std::to_string(out_channels) + ", kernel " + std::to_string(kh) + "x" +
           std::to_string(kw) + " stride " + std::to_string(sh) + "," + std::to_string(sw) + " dilation " +
           std::to_string(dh) + "," + std::to_string(dw);
  }
};

const std::vector<Geometry> kGeometries = {
    {1, 16, 16, 12, 12, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, true},   // ResNet's 3x3
    {2, 17, 33, 13, 11, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, false},  // batch 2, channels off oneDNN's blocks, stride 2
    {1, 3, 8, 23, 23, 7, 7, 2, 2, 1, 1, {3, 3, 3, 3}, true},     // ResNet's stem
    {1, 5, 7, 15, 14, 3, 5, 1, 2, 2, 1, {2, 0, 1, 3}, true},     // dilation, asymmetric pads
    {1, 4, 6, 9, 9, 1, 3, 1, 1, 1, 1, {0, 1, 0, 1}, true},       // 1x3
    // Large enough to run in pieces (backends/cpu/direct_conv.cpp): bands of rows where the input is larger
    // than the weights, with padding at the first and last band and bands of unequal height...
    {1, 32, 32, 26, 24, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, true},
    {2, 24, 40, 29, 21, 5, 3, 2, 1, 1, 2, {2, 0, 3, 2}, true},
    // ...and blocks of output channels where the weights are, the last block short.
    {1, 72, 56, 8, 8, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, true},
};

// A convolution's input, weights and bias, seeded.
struct Operands {
  std::vector<float> x, w, bias;
};
Operands operands(const Geometry& g, uint32_t seed) {
  return {random_values(size_t(g.batch * g.in_channels * g.h * g.w), seed),
          random_values(size_t(g.out_channels * g.in_channels * g.kh * g.kw), seed + 1),
          random_values(size_t(g.out_channels), seed + 2)};
}

// The convolution in double, NCHW.
std::vector<double> naive_conv(const Geometry& g, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& bias) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  std::vector<double> y(size_t(g.batch * g.out_channels * OH * OW));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t m = 0; m < g.out_channels; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double sum = g.bias ? bias[size_t(m)] : 0.0;
          for (int64_t c = 0; c < g.in_channels; ++c)
            for (int64_t ky = 0; ky < g.kh; ++ky)
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t iy = oy * g.sh - g.pads[0] + ky * g.dh, ix = ox * g.sw - g.pads[1] + kx * g.dw;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                sum += double(w[size_t(((m * g.in_channels + c) * g.kh + ky) * g.kw + kx)]) *
                       x[size_t(((n * g.in_channels + c) * g.h + iy) * g.w + ix)];
              }
          y[size_t(((n * g.out_channels + m) * OH + oy) * OW + ox)] = sum;
        }
  return y;
}

// fp32 sums of the products: within a few ulps of the sum of their magnitudes.
void expect_close(const float* got, const std::vector<double>& expected, size_t count) {
  ASSERT_EQ(count, expected.size());
  for (size_t i = 0; i < count; ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-4 * (1 + std::fabs(expected[i]))) << "at " << i;
}

// A model of one Conv: X and W graph inputs, W (and B) also initializers, so a feed may override W.
std::shared_ptr<const Graph> conv_model(const Geometry& g, const std::vector<float>& w, const std::vector<float>& bias,
                                        const std::string& auto_pad = "") {
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {-1, g.in_channels, g.h, g.w});
  b.input("w", onnx::TensorProto::FLOAT, {g.out_channels, g.in_channels, g.kh, g.kw});
  b.initializer("w", {g.out_channels, g.in_channels, g.kh, g.kw}, w);
  std::vector<std::string> inputs{"x", "w"};
  if (g.bias) {
    b.initializer("b", {g.out_channels}, bias);
    inputs.push_back("b");
  }
  auto& conv = b.node("Conv", inputs, {"y"}, "conv");
  ModelBuilder::set_ints(conv, "strides", {g.sh, g.sw});
  ModelBuilder::set_ints(conv, "dilations", {g.dh, g.dw});
  if (auto_pad.empty())
    ModelBuilder::set_ints(conv, "pads", {g.pads[0], g.pads[1], g.pads[2], g.pads[3]});
  else
    ModelBuilder::set_string(conv, "auto_pad", auto_pad);
  b.output("y");
  return load_model_from_bytes(b.bytes(), ".", "conv.onnx").graph;
}

Tensor input_of(const Geometry& g, const std::vector<float>& x) {
  return Tensor::from_vector<float>(x, {g.batch, g.in_channels, g.h, g.w});
}

}  // namespace

TEST(DirectConv, InitializerWeightsMatchANaiveConvolution) {
  for (const Geometry& g : kGeometries) {
    SCOPED_TRACE(g.name());
    const auto [x, w, bias] = operands(g, 1);
    Session session(conv_model(g, w, bias));
    const auto expected = naive_conv(g, x, w, bias);
    for (int run = 0; run < 2; ++run) {  // the second run on the kept weight layout
      const Tensor y = session.run({{"x", input_of(g, x)}}).at("y");
      ASSERT_EQ(y.shape(), (Shape{g.batch, g.out_channels, g.out_h(), g.out_w()}));
      expect_close(y.data<float>(), expected, size_t(y.numel()));
    }
  }
}

// The pieces a convolution runs as do not depend on the thread count, nor do oneDNN's sums: results are the
// same bits for any --threads.
TEST(DirectConv, ResultsDoNotDependOnTheThreadCount) {
  for (const Geometry& g : kGeometries) {
    SCOPED_TRACE(g.name());
    const auto [x, w, bias] = operands(g, 70);
    std::vector<Tensor> outputs;
    for (const int threads : {1, 2, 3}) {
      SessionOptions options;
      options.threads = threads;
      outputs.push_back(Session(conv_model(g, w, bias), options).run({{"x", input_of(g, x)}}).at("y"));
    }
    for (size_t k = 1; k < outputs.size(); ++k)
      for (int64_t i = 0; i < outputs[0].numel(); ++i)
        ASSERT_EQ(outputs[0].data<float>()[i], outputs[k].data<float>()[i]) << "at " << i;
  }
}

// auto_pad SAME_UPPER on an even input with stride 2 pads one more at the end than at the start.
TEST(DirectConv, AutomaticPaddingMatchesTheExplicitOne) {
  const Geometry g{1, 8, 8, 10, 10, 3, 3, 2, 2, 1, 1, {0, 0, 1, 1}, true};
  const auto [x, w, bias] = operands(g, 4);
  const Tensor y = Session(conv_model(g, w, bias, "SAME_UPPER")).run({{"x", input_of(g, x)}}).at("y");
  expect_close(y.data<float>(), naive_conv(g, x, w, bias), size_t(y.numel()));
}

// A new batch size makes a new primitive; the weights stay the session's.
TEST(DirectConv, InputsOfAnotherShapeInTheSameSession) {
  Geometry g = kGeometries[0];
  const auto w = random_values(size_t(g.out_channels * g.in_channels * g.kh * g.kw), 7),
             bias = random_values(size_t(g.out_channels), 8);
  Session session(conv_model(g, w, bias));
  for (const int64_t batch : {1, 3, 1}) {
    g.batch = batch;
    SCOPED_TRACE("batch " + std::to_string(batch));
    const auto x = random_values(size_t(g.batch * g.in_channels * g.h * g.w), uint32_t(10 + batch));
    const Tensor y = session.run({{"x", input_of(g, x)}}).at("y");
    expect_close(y.data<float>(), naive_conv(g, x, w, bias), size_t(y.numel()));
  }
}

// A feed that overrides the weights is no constant: a run after the initializer's layout was made reads the
// fed values, and a later run without the feed the initializer again.
TEST(DirectConv, WeightsAFeedOverridesAreReadAsFed) {
  const Geometry g{2, 17, 33, 13, 11, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, true};
  const auto [x, w, bias] = operands(g, 20);
  const auto fed = random_values(w.size(), 23);
  Session session(conv_model(g, w, bias));
  const Tensor fed_w = Tensor::from_vector<float>(fed, {g.out_channels, g.in_channels, g.kh, g.kw});
  for (int round = 0; round < 2; ++round) {
    const Tensor own = session.run({{"x", input_of(g, x)}}).at("y");
    expect_close(own.data<float>(), naive_conv(g, x, w, bias), size_t(own.numel()));
    const Tensor overridden = session.run({{"x", input_of(g, x)}, {"w", fed_w}}).at("y");
    expect_close(overridden.data<float>(), naive_conv(g, x, fed, bias), size_t(overridden.numel()));
  }
  // Rerunning the node alone: the session's own initializer, then a copy with other values.
  const Tensor* own_w = &session.initializers_in(Format::FP32).at("w");
  const Tensor* own_b = &session.initializers_in(Format::FP32).at("b");
  const Tensor xt = input_of(g, x);
  const std::vector<Tensor> again = session.rerun(0, {&xt, own_w, own_b}, session.default_config(), false);
  expect_close(again[0].data<float>(), naive_conv(g, x, w, bias), size_t(again[0].numel()));
  const std::vector<Tensor> other = session.rerun(0, {&xt, &fed_w, own_b}, session.default_config(), false);
  expect_close(other[0].data<float>(), naive_conv(g, x, fed, bias), size_t(other[0].numel()));
}

// The layout of a constant is made once per session: proven by changing the initializer's storage behind the
// session's back (which no caller may do), after which the session still computes with the old weights,
// while a rerun on a copy of the changed values computes with those.
TEST(DirectConv, ConstantWeightsAreReorderedOncePerSession) {
  if (!cpu::direct_conv_available()) GTEST_SKIP() << "built without oneDNN: every convolution takes im2col + GEMM";
  const Geometry& g = kGeometries[0];
  const auto [x, w, bias] = operands(g, 30);
  Session session(conv_model(g, w, bias));
  const Tensor first = session.run({{"x", input_of(g, x)}}).at("y");
  const Tensor& own_w = session.initializers_in(Format::FP32).at("w");
  float* stored = const_cast<float*>(own_w.data<float>());
  for (int64_t i = 0; i < own_w.numel(); ++i) stored[i] *= -1.f;
  const Tensor second = session.run({{"x", input_of(g, x)}}).at("y");
  for (int64_t i = 0; i < first.numel(); ++i) ASSERT_EQ(first.data<float>()[i], second.data<float>()[i]) << "at " << i;
  const Tensor copy = own_w.clone();
  const Tensor xt = input_of(g, x);
  const std::vector<Tensor> negated =
      session.rerun(0, {&xt, &copy, &session.initializers_in(Format::FP32).at("b")}, session.default_config(), false);
  std::vector<float> negated_w(w);
  for (float& v : negated_w) v = -v;
  expect_close(negated[0].data<float>(), naive_conv(g, x, negated_w, bias), size_t(negated[0].numel()));
}

// FP16 values: products of fp16 values are exact in fp32, so oneDNN's fp32 convolution of the fp16 grid's
// values, rounded once, is within one fp16 step of the exact sum rounded once.
TEST(DirectConv, Fp16TargetRunsOnTheFp16Grid) {
  const Geometry& g = kGeometries[3];
  const auto [x, w, bias] = operands(g, 40);
  SessionOptions options;
  options.precision = Format::FP16;
  Session session(conv_model(g, w, bias), options);
  const Tensor y = session.run({{"x", input_of(g, x)}}).at("y");
  auto on_grid = [](std::vector<float> v) {
    for (float& f : v) f = round_to_format(Format::FP16, f);
    return v;
  };
  const auto expected = naive_conv(g, on_grid(x), on_grid(w), on_grid(bias));
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float got = y.data<float>()[i];
    EXPECT_EQ(got, round_to_format(Format::FP16, got)) << "at " << i << ": not on the fp16 grid";
    const float step =
        std::ldexp(1.f, std::max(-24, std::ilogb(std::max(std::fabs(float(expected[size_t(i)])), 6.1e-5f)) - 10));
    EXPECT_NEAR(got, expected[size_t(i)], step) << "at " << i;
  }
}

// fp16 accumulation (rounded partial sums), TF32 operands and the ort-cuda bias rule are emulated on the GEMM
// path: with constant weights such a convolution must give bit for bit what it gives with its weights fed.
TEST(DirectConv, EmulatedGpuMathKeepsTheGemmPath) {
  const Geometry& g = kGeometries[0];
  const auto [x, w, bias] = operands(g, 50);
  SessionOptions fp16_sums, tf32, ort_cuda;
  fp16_sums.precision = Format::FP16;
  fp16_sums.accumulation = Accumulation::FP16;
  tf32.precision = Format::TF32;
  ort_cuda.precision = Format::FP16;
  ort_cuda.profile = RuntimeProfile::OrtCuda;
  for (const SessionOptions& options : {fp16_sums, tf32, ort_cuda}) {
    SCOPED_TRACE(std::string(format_name(options.precision)) +
                 (options.profile == RuntimeProfile::OrtCuda ? " ort-cuda" : ""));
    Session session(conv_model(g, w, bias), options);
    const Tensor constant = session.run({{"x", input_of(g, x)}}).at("y");
    const Tensor fed = session
                           .run({{"x", input_of(g, x)},
                                 {"w", Tensor::from_vector<float>(w, {g.out_channels, g.in_channels, g.kh, g.kw})}})
                           .at("y");
    for (int64_t i = 0; i < fed.numel(); ++i) ASSERT_EQ(constant.data<float>()[i], fed.data<float>()[i]) << "at " << i;
  }
}

// The helper itself: a shape it takes, the kept layout keyed on the weights' address, another address
// another layout.
TEST(DirectConv, KeepsOneLayoutPerWeightsTensor) {
  if (!cpu::direct_conv_available()) GTEST_SKIP() << "built without oneDNN";
  const Geometry& g = kGeometries[1];
  cpu::Conv2dShape shape{.batch = g.batch, .in_channels = g.in_channels, .out_channels = g.out_channels};
  const int64_t dims[][2] = {{g.h, g.w},
                             {g.kh, g.kw},
                             {g.sh, g.sw},
                             {g.dh, g.dw},
                             {g.pads[0], g.pads[1]},
                             {g.pads[2], g.pads[3]},
                             {g.out_h(), g.out_w()}};
  for (int d = 0; d < 2; ++d) {
    shape.in[d] = dims[0][d];
    shape.kernel[d] = dims[1][d];
    shape.stride[d] = dims[2][d];
    shape.dilation[d] = dims[3][d];
    shape.pad_begin[d] = dims[4][d];
    shape.pad_end[d] = dims[5][d];
    shape.out[d] = dims[6][d];
  }
  const auto x = random_values(size_t(g.batch * g.in_channels * g.h * g.w), 60);
  auto w = random_values(size_t(g.out_channels * g.in_channels * g.kh * g.kw), 61);
  const auto w2 = random_values(w.size(), 62);
  std::vector<float> y(size_t(g.batch * g.out_channels * g.out_h() * g.out_w()));
  const cpu::DirectConv conv;
  ASSERT_TRUE(conv.run(shape, x.data(), w.data(), 0, nullptr, y.data()));
  expect_close(y.data(), naive_conv(g, x, w, {}), y.size());
  const auto before = w;
  for (float& v : w) v = 0.f;  // kept layout: the same address computes with the first values
  ASSERT_TRUE(conv.run(shape, x.data(), w.data(), 0, nullptr, y.data()));
  expect_close(y.data(), naive_conv(g, x, before, {}), y.size());
  ASSERT_TRUE(conv.run(shape, x.data(), w2.data(), 0, nullptr, y.data()));
  expect_close(y.data(), naive_conv(g, x, w2, {}), y.size());
}
