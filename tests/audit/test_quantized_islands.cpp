// Q/DQ islands: the integer tensors between QuantizeLinear and DequantizeLinear hold no float values, so
// the audit measures none of them and names none unsafe in a low-precision format; DequantizeLinear's
// float output is the first value the target format stores.
#include <gtest/gtest.h>

#include "support/audit_helpers.h"

using namespace mpa;
using namespace mpa::test;

namespace {

onnx::TensorProto& int8_initializer(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<int32_t>& values) {
  onnx::TensorProto* t = b.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT8);
  for (int64_t d : dims) t->add_dims(d);
  for (int32_t v : values) t->add_int32_data(v);
  return *t;
}

// x -> QuantizeLinear -> int8 -> DequantizeLinear -> MatMul with int8 weights dequantized.
ModelBuilder qdq_matmul() {
  ModelBuilder b(21);
  b.input("x", onnx::TensorProto::FLOAT, {4, 8});
  b.initializer("x_scale", {}, {0.05f});
  int8_initializer(b, "x_zero", {}, {3});
  std::vector<int32_t> weights;
  for (int i = 0; i < 8 * 4; ++i) weights.push_back((i * 37) % 255 - 127);
  int8_initializer(b, "w_q", {8, 4}, weights);
  b.initializer("w_scale", {4}, {0.01f, 0.02f, 0.03f, 0.04f});
  b.node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"x_q"}, "quantize_x");
  b.node("DequantizeLinear", {"x_q", "x_scale", "x_zero"}, {"x_dq"}, "dequantize_x");
  ModelBuilder::set_int(b.node("DequantizeLinear", {"w_q", "w_scale"}, {"w_dq"}, "dequantize_w"), "axis", 1);
  b.node("MatMul", {"x_dq", "w_dq"}, {"y"}, "matmul");
  b.output("y");
  return b;
}

}  // namespace

TEST(QuantizedIslands, NoIntegerTensorIsMeasuredOrUnsafe) {
  const Audited a = audit(qdq_matmul(), {{{"x", normal({4, 8}, 2, 0, 7)}}, {{"x", normal({4, 8}, 2, 0, 8)}}});
  EXPECT_TRUE(a.fp16().pass) << (a.fp16().unsafe_nodes.empty() ? "" : a.reasons(a.fp16().unsafe_nodes.front()));
  const report::TensorStats& x_q = a.node("quantize_x").tensors.at(0);
  EXPECT_EQ(x_q.dtype, "int8");
  EXPECT_FALSE(x_q.measured);
  EXPECT_NE(a.node("quantize_x").targets.at("fp16").verdict, report::Verdict::Unsafe) << a.reasons("quantize_x");
  // The dequantized values are floats: measured, and stored in fp16 like any other.
  EXPECT_TRUE(a.node("dequantize_x").tensors.at(0).measured);
  EXPECT_TRUE(a.node("dequantize_w").tensors.at(0).measured);
  for (const std::string& name : a.fp16().unsafe_nodes)
    for (const report::TensorStats& t : a.node(name).tensors) EXPECT_TRUE(t.measured) << name << " " << t.name;
}
