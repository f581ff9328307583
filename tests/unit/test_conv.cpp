// Conv's CPU paths against a naive convolution written here, over geometries with strides, dilations and
// asymmetric pads. Depthwise convolutions (one input channel per group) run a direct 2-D loop, which sums in
// the naive order (bias, then the taps row by row): equal bit for bit to the naive float sum. The others run
// im2col + GEMM: im2col copies each band of output rows that reads consecutive input rows (unit strides,
// input rows as wide as output rows) in one piece and zeroes the padded ends after, other geometries row by
// row; the cases take each branch (rows wholly in the padding, taps that land in no column, several bands
// per image).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"

using namespace mpa;

namespace {

struct Case {
  const char* what;
  int64_t channels, out_channels, group, H, W, kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> pads;  // top, left, bottom, right
  bool direct = false;        // the depthwise direct loop, which sums in the naive order: equal bit for bit
};

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

void set_group(onnx::NodeProto& conv, int64_t group) {
  onnx::AttributeProto* g = conv.add_attribute();
  g->set_name("group");
  g->set_type(onnx::AttributeProto::INT);
  g->set_i(group);
}

// Runs the case's 2-D convolution with bias and checks every output against the naive sum: within a few float
// ulps of the terms' magnitude, and bit for bit against the naive float sum where the case runs the direct loop.
void check_against_naive(const Case& c) {
  SCOPED_TRACE(c.what);
  const int64_t cg = c.channels / c.group, per_group = c.out_channels / c.group;
  const auto x = random_values(size_t(c.channels * c.H * c.W), 1),
             w = random_values(size_t(c.out_channels * cg * c.kh * c.kw), 2),
             bias = random_values(size_t(c.out_channels), 3);
  mpa::test::ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {1, c.channels, c.H, c.W});
  b.initializer("w", {c.out_channels, cg, c.kh, c.kw}, w);
  b.initializer("b", {c.out_channels}, bias);
  auto& conv = b.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  mpa::test::ModelBuilder::set_ints(conv, "strides", {c.sh, c.sw});
  mpa::test::ModelBuilder::set_ints(conv, "dilations", {c.dh, c.dw});
  mpa::test::ModelBuilder::set_ints(conv, "pads", {c.pads[0], c.pads[1], c.pads[2], c.pads[3]});
  set_group(conv, c.group);
  b.output("y");
  const Model model = load_model_from_bytes(b.bytes(), ".", "conv.onnx");
  const Tensor y = Session(model.graph).run({{"x", Tensor::from_vector<float>(x, {1, c.channels, c.H, c.W})}}).at("y");

  const int64_t OH = (c.H + c.pads[0] + c.pads[2] - c.dh * (c.kh - 1) - 1) / c.sh + 1;
  const int64_t OW = (c.W + c.pads[1] + c.pads[3] - c.dw * (c.kw - 1) - 1) / c.sw + 1;
  ASSERT_EQ(y.shape(), (Shape{1, c.out_channels, OH, OW}));
  for (int64_t m = 0; m < c.out_channels; ++m)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double expected = bias[size_t(m)], magnitude = std::fabs(bias[size_t(m)]);
        float in_order = bias[size_t(m)];
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = oy * c.sh - c.pads[0] + ky * c.dh, ix = ox * c.sw - c.pads[1] + kx * c.dw;
              if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
              const float wv = w[size_t(((m * cg + ci) * c.kh + ky) * c.kw + kx)],
                          xv = x[size_t((((m / per_group) * cg + ci) * c.H + iy) * c.W + ix)];
              expected += double(wv) * xv;
              magnitude += std::fabs(double(wv) * xv);
              in_order += wv * xv;
            }
        const float got = y.data<float>()[(m * OH + oy) * OW + ox];
        // float sums of up to 576 terms: a few float ulps of the terms' magnitude
        ASSERT_NEAR(got, expected, 1e-6 * magnitude + 1e-6) << "m " << m << " at " << oy << "," << ox;
        if (c.direct) {
          ASSERT_EQ(got, in_order) << "m " << m << " at " << oy << "," << ox;
        }
      }
}

}  // namespace

TEST(DepthwiseConv, DirectAndGemmPathsMatchANaiveConvolution) {
  const int64_t H = 11, W = 14;
  const std::vector<Case> cases = {
      {"MobileNet 3x3", 4, 4, 4, H, W, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, true},
      {"stride 2", 4, 4, 4, H, W, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, true},
      {"channel multiplier, dilation, asymmetric pads", 3, 6, 3, H, W, 5, 3, 1, 2, 2, 1, {2, 0, 1, 3}, true},
      {"MNIST's first layer: one input channel, 8 filters (GEMM)", 1, 8, 1, H, W, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}},
      {"stride 2, odd and even column shifts", 2, 2, 2, H, W, 3, 3, 2, 2, 1, 1, {0, 1, 1, 0}, true},
      {"stride 2, dilated columns, a wide left pad", 2, 2, 2, H, W, 3, 5, 1, 2, 1, 2, {1, 3, 1, 2}, true},
      {"stride 3, four taps per row", 2, 2, 2, H, W, 2, 4, 1, 3, 1, 1, {0, 1, 0, 2}, true},
      {"taps 8 apart on 14 columns: no output gets all three", 2, 2, 2, H, W, 3, 3, 1, 1, 1, 8, {1, 8, 1, 8}, true},
      {"MobileNetV3's 5x5", 3, 3, 3, H, W, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}, true},
      {"7x7, stride 2 along the row", 2, 2, 2, H, W, 7, 7, 1, 2, 1, 1, {3, 3, 3, 3}, true},
  };
  for (const Case& c : cases) check_against_naive(c);
}

TEST(Conv, Im2colPathsMatchANaiveConvolution) {
  const std::vector<Case> cases = {
      {"3x3 same padding", 5, 4, 1, 9, 12, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},
      {"5x5 same padding, one input channel", 1, 8, 1, 28, 28, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}},
      {"asymmetric column pads of the same width", 3, 2, 1, 7, 10, 3, 3, 1, 1, 1, 1, {0, 0, 2, 2}},
      {"dilated rows and columns, same width", 4, 3, 1, 11, 9, 3, 3, 1, 1, 3, 2, {3, 2, 3, 2}},
      {"a tap that lands in no column", 2, 2, 1, 5, 6, 2, 3, 1, 1, 1, 4, {1, 8, 0, 0}},
      {"more padding rows than input rows", 2, 3, 1, 2, 5, 5, 3, 1, 1, 1, 1, {3, 1, 4, 1}},
      {"two groups, same padding", 4, 6, 2, 6, 7, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},
      {"stride 2", 3, 4, 1, 9, 12, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}},
      {"row stride 2, column stride 1", 3, 4, 1, 9, 12, 3, 3, 2, 1, 1, 1, {1, 1, 1, 1}},
      {"ResNet's stem: 7x7, stride 2, odd and even shifts", 3, 4, 1, 15, 17, 7, 7, 2, 2, 1, 1, {3, 3, 3, 3}},
      {"column stride 2, dilated, a wide left pad", 2, 3, 1, 6, 11, 2, 3, 1, 2, 1, 3, {0, 5, 1, 0}},
      {"1x1 stride 2 (ResNet's downsampling)", 4, 3, 1, 8, 9, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}},
      {"narrower output rows (valid)", 3, 4, 1, 9, 12, 3, 3, 1, 1, 1, 1, {0, 0, 0, 0}},
      {"one output row per band (64 channels x 3x3 x 1024 columns)", 64, 2, 1, 3, 1024, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},
  };
  for (const Case& c : cases) check_against_naive(c);
}

// 1-D convolutions run the 2-D kernels on a height-1 view: plain, grouped and depthwise ones against the naive
// sum, a depthwise kernel wider than the direct loop takes (64 taps) among them.
TEST(DepthwiseConv, OneDimensionalConvolutionsMatchANaiveConvolution) {
  struct OneDimensional {
    int64_t group, L, K, stride, dilation;
  };
  for (const OneDimensional& c : {OneDimensional{1, 37, 5, 2, 2}, OneDimensional{3, 37, 5, 2, 2},
                                  OneDimensional{3, 100, 70, 1, 1}, OneDimensional{3, 160, 70, 3, 2}}) {
    SCOPED_TRACE("group " + std::to_string(c.group) + ", kernel " + std::to_string(c.K));
    const int64_t channels = 3, out_channels = 6, cg = channels / c.group, pad_l = 3, pad_r = 1;
    const auto x = random_values(size_t(channels * c.L), 4), w = random_values(size_t(out_channels * cg * c.K), 5);
    mpa::test::ModelBuilder b(13);
    b.input("x", onnx::TensorProto::FLOAT, {1, channels, c.L});
    b.initializer("w", {out_channels, cg, c.K}, w);
    auto& conv = b.node("Conv", {"x", "w"}, {"y"}, "conv");
    mpa::test::ModelBuilder::set_ints(conv, "strides", {c.stride});
    mpa::test::ModelBuilder::set_ints(conv, "dilations", {c.dilation});
    mpa::test::ModelBuilder::set_ints(conv, "pads", {pad_l, pad_r});
    set_group(conv, c.group);
    b.output("y");
    const Model model = load_model_from_bytes(b.bytes(), ".", "conv1d.onnx");
    const Tensor y = Session(model.graph).run({{"x", Tensor::from_vector<float>(x, {1, channels, c.L})}}).at("y");
    const int64_t OL = (c.L + pad_l + pad_r - c.dilation * (c.K - 1) - 1) / c.stride + 1;
    ASSERT_EQ(y.shape(), (Shape{1, out_channels, OL}));
    const int64_t per_group = out_channels / c.group;
    for (int64_t m = 0; m < out_channels; ++m)
      for (int64_t o = 0; o < OL; ++o) {
        double expected = 0;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t k = 0; k < c.K; ++k) {
            const int64_t i = o * c.stride - pad_l + k * c.dilation;
            if (i >= 0 && i < c.L)
              expected += double(w[size_t((m * cg + ci) * c.K + k)]) * x[size_t(((m / per_group) * cg + ci) * c.L + i)];
          }
        EXPECT_NEAR(y.data<float>()[m * OL + o], expected, 1e-5) << "m " << m << " at " << o;
      }
  }
}
