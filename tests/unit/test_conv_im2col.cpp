// Convolutions with several input channels per group run im2col + GEMM. im2col copies each band of output rows
// that reads consecutive input rows (unit strides, input rows as wide as output rows) in one piece and zeroes
// the padded ends after; other geometries row by row. Both against a naive convolution, over geometries that
// take each branch: rows wholly in the padding, taps that land in no column, several bands per image.
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
};

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

}  // namespace

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
      {"narrower output rows (valid)", 3, 4, 1, 9, 12, 3, 3, 1, 1, 1, 1, {0, 0, 0, 0}},
      {"one output row per band (64 channels x 3x3 x 1024 columns)", 64, 2, 1, 3, 1024, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},
  };
  for (const Case& c : cases) {
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
    onnx::AttributeProto* group = conv.add_attribute();
    group->set_name("group");
    group->set_type(onnx::AttributeProto::INT);
    group->set_i(c.group);
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
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = oy * c.sh - c.pads[0] + ky * c.dh, ix = ox * c.sw - c.pads[1] + kx * c.dw;
                if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
                const double product = double(w[size_t(((m * cg + ci) * c.kh + ky) * c.kw + kx)]) *
                                       x[size_t((((m / per_group) * cg + ci) * c.H + iy) * c.W + ix)];
                expected += product;
                magnitude += std::fabs(product);
              }
          // float sums of up to 576 terms: a few float ulps of the terms' magnitude
          ASSERT_NEAR(y.data<float>()[(m * OH + oy) * OW + ox], expected, 1e-6 * magnitude + 1e-6)
              << "m " << m << " at " << oy << "," << ox;
        }
  }
}
