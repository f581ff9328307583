// MaxPool runs 2-D float planes through a separable fast path unless Indices are requested or the input
// holds NaN/Inf; the window loop serves the rest. Both must give the same values for every geometry.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"

using namespace mpa;

namespace {

struct Geometry {
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t ceil_mode;
};

// Y of a MaxPool over x, with the Indices output requested (window loop) or not (fast path).
Tensor max_pool(const Tensor& x, const Geometry& g, bool with_indices) {
  mpa::test::ModelBuilder b(12);
  b.input("x", onnx::TensorProto::FLOAT, x.shape());
  std::vector<std::string> outputs = {"y"};
  if (with_indices) outputs.push_back("i");
  auto& node = b.node("MaxPool", {"x"}, outputs, "pool");
  mpa::test::ModelBuilder::set_ints(node, "kernel_shape", g.kernel);
  mpa::test::ModelBuilder::set_ints(node, "strides", g.strides);
  mpa::test::ModelBuilder::set_ints(node, "pads", g.pads);
  mpa::test::ModelBuilder::set_ints(node, "dilations", g.dilations);
  onnx::AttributeProto* ceil = node.add_attribute();
  ceil->set_name("ceil_mode");
  ceil->set_type(onnx::AttributeProto::INT);
  ceil->set_i(g.ceil_mode);
  b.output("y");
  if (with_indices) b.output("i", onnx::TensorProto::INT64);
  const Model model = load_model_from_bytes(b.bytes(), ".", "pool.onnx");
  return Session(model.graph).run({{"x", x}}).at("y");
}

}  // namespace

TEST(MaxPoolPaths, SeparableFastPathEqualsTheWindowLoop) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> values(2 * 3 * 17 * 23);
  for (float& v : values) v = normal(rng);
  const Tensor x = Tensor::from_vector<float>(values, {2, 3, 17, 23});
  const std::vector<Geometry> geometries = {
      {{5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 0},     // YOLO's SPP pools
      {{13, 13}, {1, 1}, {6, 6, 6, 6}, {1, 1}, 0},
      {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0},     // ResNet's stem
      {{2, 3}, {2, 1}, {0, 1, 1, 0}, {1, 1}, 1},     // asymmetric, ceil mode
      {{3, 2}, {3, 2}, {1, 0, 2, 1}, {2, 3}, 1},     // dilated, stride > kernel
      {{23, 23}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0},   // taller than the input: no output row
  };
  for (const Geometry& g : geometries) {
    SCOPED_TRACE("kernel " + std::to_string(g.kernel[0]) + "x" + std::to_string(g.kernel[1]));
    Tensor fast, loop;
    try {
      fast = max_pool(x, g, false);
    } catch (const Error&) {
      EXPECT_THROW(max_pool(x, g, true), Error);  // both paths refuse a geometry without output
      continue;
    }
    loop = max_pool(x, g, true);
    ASSERT_EQ(fast.shape(), loop.shape());
    EXPECT_EQ(std::memcmp(fast.raw(), loop.raw(), fast.nbytes()), 0);
  }
}
