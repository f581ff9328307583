// Depthwise Conv (one input channel per group) runs a direct 2-D loop, single-input-channel convolutions
// with several filters the GEMM path. Both against a naive convolution written here, over geometries with
// strides, dilations and asymmetric pads; the direct loop also against the naive sum in float, in its order
// (bias, then the taps row by row), bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"

using namespace mpa;

namespace {

struct Case {
  int64_t channels, multiplier, group, kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> pads;  // top, left, bottom, right
  bool direct = true;         // the direct loop, which sums in the naive order: equal bit for bit
};

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

}  // namespace

TEST(DepthwiseConv, DirectAndGemmPathsMatchANaiveConvolution) {
  const int64_t H = 11, W = 14;
  const std::vector<Case> cases = {
      {4, 1, 4, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},         // MobileNet 3x3
      {4, 1, 4, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}},         // stride 2
      {3, 2, 3, 5, 3, 1, 2, 2, 1, {2, 0, 1, 3}},         // channel multiplier, dilation, asymmetric pads
      {1, 8, 1, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}, false},  // MNIST's first layer: one input channel, 8 filters
      {2, 1, 2, 3, 3, 2, 2, 1, 1, {0, 1, 1, 0}},         // stride 2, odd and even column shifts
      {2, 1, 2, 3, 5, 1, 2, 1, 2, {1, 3, 1, 2}},         // stride 2, dilated columns, a wide left pad
      {2, 1, 2, 2, 4, 1, 3, 1, 1, {0, 1, 0, 2}},         // stride 3, four taps per row
      {2, 1, 2, 3, 3, 1, 1, 1, 8, {1, 8, 1, 8}},         // taps 8 apart on 14 columns: no output gets all three
      {3, 1, 3, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}},         // MobileNetV3's 5x5
      {2, 1, 2, 7, 7, 1, 2, 1, 1, {3, 3, 3, 3}},         // 7x7, stride 2 along the row
  };
  for (const Case& c : cases) {
    const int64_t out_channels = c.channels * c.multiplier;
    SCOPED_TRACE("channels " + std::to_string(c.channels) + " x" + std::to_string(c.multiplier) + " kernel " +
                 std::to_string(c.kh) + "x" + std::to_string(c.kw));
    const auto x = random_values(size_t(c.channels * H * W), 1), w = random_values(size_t(out_channels * c.kh * c.kw), 2),
               bias = random_values(size_t(out_channels), 3);
    mpa::test::ModelBuilder b(13);
    b.input("x", onnx::TensorProto::FLOAT, {1, c.channels, H, W});
    b.initializer("w", {out_channels, 1, c.kh, c.kw}, w);
    b.initializer("b", {out_channels}, bias);
    auto& conv = b.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
    mpa::test::ModelBuilder::set_ints(conv, "strides", {c.sh, c.sw});
    mpa::test::ModelBuilder::set_ints(conv, "dilations", {c.dh, c.dw});
    mpa::test::ModelBuilder::set_ints(conv, "pads", {c.pads[0], c.pads[1], c.pads[2], c.pads[3]});
    onnx::AttributeProto* group = conv.add_attribute();
    group->set_name("group");
    group->set_type(onnx::AttributeProto::INT);
    group->set_i(c.group);
    b.output("y");
    const Model model = load_model_from_bytes(b.bytes(), ".", "depthwise.onnx");
    const Tensor y = Session(model.graph).run({{"x", Tensor::from_vector<float>(x, {1, c.channels, H, W})}}).at("y");

    const int64_t OH = (H + c.pads[0] + c.pads[2] - c.dh * (c.kh - 1) - 1) / c.sh + 1;
    const int64_t OW = (W + c.pads[1] + c.pads[3] - c.dw * (c.kw - 1) - 1) / c.sw + 1;
    ASSERT_EQ(y.shape(), (Shape{1, out_channels, OH, OW}));
    for (int64_t m = 0; m < out_channels; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double expected = bias[size_t(m)];
          float in_order = bias[size_t(m)];
          const int64_t ci = m / c.multiplier;
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = oy * c.sh - c.pads[0] + ky * c.dh, ix = ox * c.sw - c.pads[1] + kx * c.dw;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              const float product = w[size_t((m * c.kh + ky) * c.kw + kx)] * x[size_t((ci * H + iy) * W + ix)];
              expected += double(w[size_t((m * c.kh + ky) * c.kw + kx)]) * x[size_t((ci * H + iy) * W + ix)];
              in_order += product;
            }
          const float got = y.data<float>()[(m * OH + oy) * OW + ox];
          EXPECT_NEAR(got, expected, 1e-5) << "m " << m << " at " << oy << "," << ox;
          if (c.direct) {
            EXPECT_EQ(got, in_order) << "m " << m << " at " << oy << "," << ox;
          }
        }
  }
}

// 1-D convolutions run the 2-D kernels on a height-1 view: a plain and a depthwise one against the naive sum.
TEST(DepthwiseConv, OneDimensionalConvolutionsMatchANaiveConvolution) {
  const int64_t L = 37;
  for (const int64_t group : {int64_t{1}, int64_t{3}}) {
    SCOPED_TRACE("group " + std::to_string(group));
    const int64_t channels = 3, out_channels = 6, cg = channels / group, K = 5, stride = 2, dilation = 2, pad_l = 3, pad_r = 1;
    const auto x = random_values(size_t(channels * L), 4), w = random_values(size_t(out_channels * cg * K), 5);
    mpa::test::ModelBuilder b(13);
    b.input("x", onnx::TensorProto::FLOAT, {1, channels, L});
    b.initializer("w", {out_channels, cg, K}, w);
    auto& conv = b.node("Conv", {"x", "w"}, {"y"}, "conv");
    mpa::test::ModelBuilder::set_ints(conv, "strides", {stride});
    mpa::test::ModelBuilder::set_ints(conv, "dilations", {dilation});
    mpa::test::ModelBuilder::set_ints(conv, "pads", {pad_l, pad_r});
    onnx::AttributeProto* g = conv.add_attribute();
    g->set_name("group");
    g->set_type(onnx::AttributeProto::INT);
    g->set_i(group);
    b.output("y");
    const Model model = load_model_from_bytes(b.bytes(), ".", "conv1d.onnx");
    const Tensor y = Session(model.graph).run({{"x", Tensor::from_vector<float>(x, {1, channels, L})}}).at("y");
    const int64_t OL = (L + pad_l + pad_r - dilation * (K - 1) - 1) / stride + 1;
    ASSERT_EQ(y.shape(), (Shape{1, out_channels, OL}));
    const int64_t per_group = out_channels / group;
    for (int64_t m = 0; m < out_channels; ++m)
      for (int64_t o = 0; o < OL; ++o) {
        double expected = 0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t k = 0; k < K; ++k) {
            const int64_t i = o * stride - pad_l + k * dilation;
            if (i >= 0 && i < L)
              expected += double(w[size_t((m * cg + c) * K + k)]) * x[size_t(((m / per_group) * cg + c) * L + i)];
          }
        EXPECT_NEAR(y.data<float>()[m * OL + o], expected, 1e-5) << "m " << m << " at " << o;
      }
  }
}
