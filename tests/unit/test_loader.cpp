#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "model/loader.h"
#include "support/model_builder.h"

using namespace mpa;
using mpa::test::ModelBuilder;
using mpa::test::TempDir;

namespace {

Model load_bytes(const ModelBuilder& b, const std::filesystem::path& dir = ".") {
  return load_model_from_bytes(b.bytes(), dir, "test.onnx");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Loader, SortsNodesTopologicallyAndKeepsFileOrderAmongReadyNodes) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Relu", {"a"}, {"y"}, "second");
  b.node("Neg", {"x"}, {"a"}, "first");
  b.node("Abs", {"x"}, {"z"}, "independent");
  b.output("y").output("z");
  const Model m = load_bytes(b);
  ASSERT_EQ(m.graph->nodes.size(), 3u);
  EXPECT_EQ(m.graph->nodes[0].name, "first");
  EXPECT_EQ(m.graph->nodes[1].name, "second");
  EXPECT_EQ(m.graph->nodes[2].name, "independent");
}

TEST(Loader, DecodesTypedFieldsOfEveryDtype) {
  ModelBuilder b;
  auto add = [&](const std::string& name, int type, auto fill) {
    onnx::TensorProto* t = b.graph().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(2);
    fill(*t);
  };
  add("f32", onnx::TensorProto::FLOAT, [](auto& t) { t.add_float_data(1.5f); t.add_float_data(-2.f); });
  add("f64", onnx::TensorProto::DOUBLE, [](auto& t) { t.add_double_data(0.25); t.add_double_data(3); });
  add("f16", onnx::TensorProto::FLOAT16, [](auto& t) { t.add_int32_data(0x3C00); t.add_int32_data(0xC000); });
  add("bf16", onnx::TensorProto::BFLOAT16, [](auto& t) { t.add_int32_data(0x3F80); t.add_int32_data(0x4040); });
  add("i8", onnx::TensorProto::INT8, [](auto& t) { t.add_int32_data(-128); t.add_int32_data(127); });
  add("u16", onnx::TensorProto::UINT16, [](auto& t) { t.add_int32_data(65535); t.add_int32_data(1); });
  add("i64", onnx::TensorProto::INT64, [](auto& t) { t.add_int64_data(-(int64_t{1} << 40)); t.add_int64_data(7); });
  add("u32", onnx::TensorProto::UINT32, [](auto& t) { t.add_uint64_data(4000000000u); t.add_uint64_data(2); });
  add("u64", onnx::TensorProto::UINT64, [](auto& t) { t.add_uint64_data(~uint64_t{0}); t.add_uint64_data(2); });
  add("b", onnx::TensorProto::BOOL, [](auto& t) { t.add_int32_data(1); t.add_int32_data(0); });
  b.input("x", onnx::TensorProto::FLOAT, {1});
  b.node("Identity", {"x"}, {"y"});
  b.output("y");
  const Model m = load_bytes(b);
  const auto& init = m.graph->initializers;
  EXPECT_EQ(init.at("f32").to_double_vector(), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(init.at("f64").to_double_vector(), (std::vector<double>{0.25, 3}));
  EXPECT_EQ(init.at("f16").to_double_vector(), (std::vector<double>{1, -2}));
  EXPECT_EQ(init.at("bf16").to_double_vector(), (std::vector<double>{1, 3}));
  EXPECT_EQ(init.at("i8").to_int64_vector(), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(init.at("u16").to_int64_vector(), (std::vector<int64_t>{65535, 1}));
  EXPECT_EQ(init.at("i64").to_int64_vector(), (std::vector<int64_t>{-(int64_t{1} << 40), 7}));
  EXPECT_EQ(init.at("u32").data<uint32_t>()[0], 4000000000u);
  EXPECT_EQ(init.at("u64").data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(init.at("b").to_int64_vector(), (std::vector<int64_t>{1, 0}));
}

// Narrow types: 4-bit and 2-bit values packed low bits first, in raw_data or one byte per int32_data entry
// (an odd count leaves the last byte half used); float8 codes one per int32_data entry.
TEST(Loader, UnpacksNarrowTypes) {
  ModelBuilder b;
  auto add = [&](const std::string& name, int type, int64_t n, auto fill) {
    onnx::TensorProto* t = b.graph().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(n);
    fill(*t);
  };
  add("i4", static_cast<int>(DType::Int4), 3, [](auto& t) { t.set_raw_data(std::string("\x8F\x07", 2)); });
  add("u2", static_cast<int>(DType::UInt2), 5, [](auto& t) {
    t.add_int32_data(0xE4);
    t.add_int32_data(0x02);
  });
  add("i2", static_cast<int>(DType::Int2), 4, [](auto& t) { t.set_raw_data(std::string("\xE4", 1)); });
  add("f4", static_cast<int>(DType::Float4E2M1), 2, [](auto& t) { t.add_int32_data(0xF1); });
  add("e4m3", static_cast<int>(DType::Float8E4M3FN), 2, [](auto& t) {
    t.add_int32_data(0x38);
    t.add_int32_data(0xFF);
  });
  add("fnuz", static_cast<int>(DType::Float8E4M3FNUZ), 2, [](auto& t) {
    t.add_int32_data(0x80);
    t.add_int32_data(0x40);
  });
  add("e8m0", static_cast<int>(DType::Float8E8M0), 2, [](auto& t) { t.set_raw_data(std::string("\x7F\x00", 2)); });
  b.input("x", onnx::TensorProto::FLOAT, {1});
  b.node("Identity", {"x"}, {"y"});
  b.output("y");
  const Model m = load_bytes(b);
  const auto& init = m.graph->initializers;
  EXPECT_EQ(init.at("i4").to_int64_vector(), (std::vector<int64_t>{-1, -8, 7}));
  EXPECT_EQ(init.at("u2").to_int64_vector(), (std::vector<int64_t>{0, 1, 2, 3, 2}));
  EXPECT_EQ(init.at("i2").to_int64_vector(), (std::vector<int64_t>{0, 1, -2, -1}));
  EXPECT_EQ(init.at("f4").to_double_vector(), (std::vector<double>{0.5, -6}));
  const std::vector<double> e4m3 = init.at("e4m3").to_double_vector();
  EXPECT_EQ(e4m3[0], 1.0);
  EXPECT_TRUE(std::isnan(e4m3[1]));
  const std::vector<double> fnuz = init.at("fnuz").to_double_vector();
  EXPECT_TRUE(std::isnan(fnuz[0]));
  EXPECT_EQ(fnuz[1], 1.0);  // bias 8: 0x40 is 2^(8 - 8)
  EXPECT_EQ(init.at("e8m0").to_double_vector(), (std::vector<double>{1.0, std::ldexp(1.0, -127)}));
  // The packed size is checked: 3 int4 values need 2 bytes.
  ModelBuilder bad;
  onnx::TensorProto* t = bad.graph().add_initializer();
  t->set_name("short");
  t->set_data_type(static_cast<int>(DType::Int4));
  t->add_dims(3);
  t->set_raw_data(std::string("\x01", 1));
  bad.input("x", onnx::TensorProto::FLOAT, {1});
  bad.node("Identity", {"x"}, {"y"});
  bad.output("y");
  EXPECT_NE(error_of([&] { load_bytes(bad); }).find("needs 2"), std::string::npos)
      << error_of([&] { load_bytes(bad); });
}

TEST(Loader, DecodesRawDataAndExternalData) {
  TempDir dir;
  const float weights[3] = {1.f, 2.f, 3.f};
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    const char pad[4] = {0, 0, 0, 0};
    out.write(pad, 4);  // the tensor starts at offset 4
    out.write(reinterpret_cast<const char*>(weights), sizeof weights);
  }
  ModelBuilder b;
  onnx::TensorProto* raw = b.graph().add_initializer();
  raw->set_name("raw");
  raw->set_data_type(onnx::TensorProto::FLOAT);
  raw->add_dims(3);
  raw->set_raw_data(std::string(reinterpret_cast<const char*>(weights), sizeof weights));
  onnx::TensorProto* ext = b.graph().add_initializer();
  ext->set_name("ext");
  ext->set_data_type(onnx::TensorProto::FLOAT);
  ext->add_dims(3);
  ext->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = ext->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "4");
  kv("length", "12");
  b.input("x", onnx::TensorProto::FLOAT, {3});
  b.node("Add", {"x", "ext"}, {"y"});
  b.output("y");
  b.save(dir / "model.onnx");
  const Model m = load_model(dir / "model.onnx");
  EXPECT_EQ(m.graph->initializers.at("raw").to_double_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(m.graph->initializers.at("ext").to_double_vector(), (std::vector<double>{1, 2, 3}));
}

// Initializers take their raw_data bytes over rather than copying them; the bytes must fit the shape.
TEST(Loader, RawDataBecomesTheTensorsStorageWithoutACopy) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(64);
  std::vector<float> values(64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * float(i);
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  const void* bytes = proto.raw_data().data();
  const Tensor t = tensor_from_proto(std::move(proto), ".", "t");
  EXPECT_EQ(t.raw(), bytes);
  EXPECT_EQ(t.to_double_vector(), std::vector<double>(values.begin(), values.end()));
  EXPECT_THROW(Tensor::adopt(DType::Float32, {3}, std::string(8, '\0')), Error);
}

TEST(Loader, InputsThatAreInitializersBecomeOverridableDefaults) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.input("bias", onnx::TensorProto::FLOAT, {2});
  b.initializer("bias", {2}, {1, 2});
  b.node("Add", {"x", "bias"}, {"y"});
  b.output("y");
  const Model m = load_bytes(b);
  ASSERT_EQ(m.graph->inputs.size(), 1u);
  EXPECT_EQ(m.graph->inputs[0].name, "x");
  EXPECT_TRUE(m.graph->initializers.count("bias"));
}

TEST(Loader, RecordsOpsetsPerDomainAndSubgraphsWithOuterScopeDependencies) {
  ModelBuilder b(13);
  auto* ml = b.model().add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  b.input("cond", onnx::TensorProto::BOOL, {});
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Neg", {"x"}, {"negx"}, "producer");
  onnx::NodeProto& if_node = b.node("If", {"cond"}, {"y"}, "branch");
  for (const char* key : {"then_branch", "else_branch"}) {
    auto* a = if_node.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->add_input("negx");  // read from the enclosing graph
    n->add_output("out");
    g->add_output()->set_name("out");
  }
  // Put the If first in the file: the outer-scope read must still order it after its producer.
  b.graph().mutable_node()->SwapElements(0, 1);
  b.output("y");
  const Model m = load_bytes(b);
  EXPECT_EQ(m.graph->opset(""), 13);
  EXPECT_EQ(m.graph->opset("ai.onnx.ml"), 3);
  ASSERT_EQ(m.graph->nodes.size(), 2u);
  EXPECT_EQ(m.graph->nodes[0].name, "producer");
  const Node& branch = m.graph->nodes[1];
  EXPECT_EQ(branch.implicit_inputs, std::vector<std::string>{"negx"});
  ASSERT_TRUE(branch.attribute("then_branch")->g);
  EXPECT_EQ(branch.attribute("then_branch")->g->nodes.at(0).op_type, "Relu");
}

TEST(Loader, RejectsMalformedGraphsWithMessagesNamingTheNode) {
  {
    ModelBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2});
    b.node("Relu", {"ghost"}, {"y"}, "reader");
    b.output("y");
    const std::string msg = error_of([&] { load_bytes(b); });
    EXPECT_NE(msg.find("test.onnx"), std::string::npos) << msg;
    EXPECT_NE(msg.find("node 'reader' (Relu) reads 'ghost'"), std::string::npos) << msg;
  }
  {
    ModelBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2});
    b.node("Add", {"x", "b"}, {"a"}, "n1");
    b.node("Relu", {"a"}, {"b"}, "n2");
    b.output("b");
    EXPECT_NE(error_of([&] { load_bytes(b); }).find("cycle"), std::string::npos);
  }
  {
    ModelBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2});
    onnx::TensorProto& t = b.initializer("huge", {int64_t{1} << 40}, {});
    t.set_raw_data(std::string(8, '\0'));
    b.node("Add", {"x", "huge"}, {"y"});
    b.output("y");
    const std::string msg = error_of([&] { load_bytes(b); });
    EXPECT_NE(msg.find("initializer 'huge'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("raw_data has 8 bytes"), std::string::npos) << msg;
  }
}

TEST(Loader, NegativeDeclaredDimsAreDynamic) {
  // Older paddle2onnx exports declare dynamic dims as dim_value -1; onnxruntime reads them as unknown.
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 3});
  b.graph().mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(-1);
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  const Model m = load_model_from_bytes(b.bytes(), ".", "m.onnx");
  EXPECT_EQ(m.graph->inputs[0].dims, (Shape{-1, 3}));
}
