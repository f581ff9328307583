#include <gtest/gtest.h>

#include <cmath>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"
#include "tensor/float16.h"

using namespace mpa;
using mpa::test::ModelBuilder;

namespace {

// x -> Mul(x, 1e-3) "down" -> Mul(., 1e3) "up": in fp16 the middle value loses bits (it is subnormal),
// keeping "down" in fp32 does not help (its consumer stores fp16 again), keeping both does.
std::shared_ptr<const Graph> chain() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.initializer("small", {}, {1e-3f});
  b.initializer("big", {}, {1e3f});
  b.node("Mul", {"x", "small"}, {"tiny"}, "down");
  b.node("Mul", {"tiny", "small"}, {"tinier"}, "down2");
  b.node("Mul", {"tinier", "big"}, {"back"}, "up");
  b.node("Mul", {"back", "big"}, {"y"}, "up2");
  b.output("y");
  return load_model_from_bytes(b.bytes(), ".", "chain.onnx").graph;
}

std::vector<float> run(const std::map<std::string, Format>& nodes, Format precision = Format::FP16) {
  SessionOptions o;
  o.precision = precision;
  o.node_precision = nodes;
  Session s(chain(), o);
  const Tensor y = s.run({{"x", Tensor::from_vector<float>({0.3f, 1.7f, -2.9f, 0.011f}, {4})}}).at("y");
  return {y.data<float>(), y.data<float>() + 4};
}

float fp16(float v) { return half_to_float(float_to_half(v)); }

}  // namespace

TEST(MixedPrecision, EveryNodeInFp16RoundsEachOutput) {
  const std::vector<float> got = run({});
  // By hand: each Mul computes in float on fp16-grid inputs and rounds once.
  const float s = fp16(1e-3f), b = fp16(1e3f);
  for (size_t i = 0; i < 4; ++i) {
    const float x = fp16(std::vector<float>{0.3f, 1.7f, -2.9f, 0.011f}[i]);
    EXPECT_EQ(got[i], fp16(fp16(fp16(fp16(x * s) * s) * b) * b));
  }
}

TEST(MixedPrecision, KeptNodesComputeAndStoreInFp32AndConsumersConvertBack) {
  const std::vector<float> all16 = run({});
  const std::vector<float> all32 = run({}, Format::FP32);
  const std::vector<float> kept = run({{"down2", Format::FP32}, {"up", Format::FP32}});
  const float s = fp16(1e-3f), b = fp16(1e3f);
  for (size_t i = 0; i < 4; ++i) {
    const float x = fp16(std::vector<float>{0.3f, 1.7f, -2.9f, 0.011f}[i]);
    const float down = fp16(x * s);  // fp16 node
    // fp32 nodes read the fp16 value exactly and their own fp32 weights, and keep fp32 results
    const float up = (down * 1e-3f) * 1e3f;
    EXPECT_EQ(kept[i], fp16(fp16(up) * b));  // the last node converts its input to fp16 and stores fp16
  }
  // Keeping the subnormal stretch in fp32 brings the result closer to fp32 than all-fp16.
  double err_kept = 0, err_all = 0;
  for (size_t i = 0; i < 4; ++i) {
    err_kept += std::fabs(kept[i] - all32[i]);
    err_all += std::fabs(all16[i] - all32[i]);
  }
  EXPECT_LT(err_kept, err_all);
}

TEST(MixedPrecision, UnknownNodeNamesAndFp64MixingFail) {
  SessionOptions o;
  o.precision = Format::FP16;
  o.node_precision = {{"nope", Format::FP32}};
  EXPECT_THROW(Session(chain(), o), Error);
  o.node_precision = {{"down", Format::FP64}};
  EXPECT_THROW(Session(chain(), o), Error);
}

// A Slice that is a view into its input's storage and stores fp16 rounds a copy: its input, kept in fp32 and
// read again afterwards, keeps its values (an in-place rounding would have changed them under the later reader).
TEST(MixedPrecision, AnFp16SliceViewLeavesItsFp32InputIntact) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.initializer("third", {}, {1.f / 3});
  b.int64_initializer("start", {1}, {1});
  b.int64_initializer("end", {1}, {4});
  b.node("Mul", {"x", "third"}, {"t"}, "thirds");
  b.node("Slice", {"t", "start", "end"}, {"tail"}, "tail");
  b.node("Identity", {"t"}, {"t_out"}, "later");
  b.output("tail");
  b.output("t_out");
  SessionOptions o;
  o.precision = Format::FP16;
  o.node_precision = {{"thirds", Format::FP32}, {"later", Format::FP32}};
  Session s(load_model_from_bytes(b.bytes(), ".", "slice_view.onnx").graph, o);
  const TensorMap out = s.run({{"x", Tensor::from_vector<float>({1.f, 2.f, 4.f, 5.f}, {4})}});
  for (int i = 0; i < 4; ++i) {
    const float third = std::vector<float>{1.f, 2.f, 4.f, 5.f}[size_t(i)] * (1.f / 3);  // the fp32 node
    EXPECT_EQ(out.at("t_out").data<float>()[i], third) << i;
    EXPECT_NE(third, fp16(third)) << i;  // not on the fp16 grid: a rounding in place would show
    if (i > 0) {
      EXPECT_EQ(out.at("tail").data<float>()[i - 1], fp16(third)) << i;
    }
  }
}
