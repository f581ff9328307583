// Depthwise Conv (one input channel per group) runs a direct 2-D loop, single-input-channel convolutions
// with several filters the GEMM path. Both against a naive convolution written here, over geometries with
// strides, dilations and asymmetric pads.
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
      {4, 1, 4, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},  // MobileNet 3x3
      {4, 1, 4, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}},  // stride 2
      {3, 2, 3, 5, 3, 1, 2, 2, 1, {2, 0, 1, 3}},  // channel multiplier, dilation, asymmetric pads
      {1, 8, 1, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}},  // MNIST's first layer: one input channel, 8 filters
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
          const int64_t ci = m / c.multiplier;
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = oy * c.sh - c.pads[0] + ky * c.dh, ix = ox * c.sw - c.pads[1] + kx * c.dw;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              expected += double(w[size_t((m * c.kh + ky) * c.kw + kx)]) * x[size_t((ci * H + iy) * W + ix)];
            }
          EXPECT_NEAR(y.data<float>()[(m * OH + oy) * OW + ox], expected, 1e-5) << "m " << m << " at " << oy << "," << ox;
        }
  }
}
