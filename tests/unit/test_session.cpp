#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model/loader.h"
#include "runtime/precision.h"
#include "runtime/session.h"
#include "support/model_builder.h"

using namespace mpa;
using mpa::test::ModelBuilder;

namespace {

// x -> Neg -> Relu -> Neg -> ... (depth nodes), a chain whose intermediates die right after use.
std::shared_ptr<const Graph> chain(int depth) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {-1, 1024});
  std::string prev = "x";
  for (int i = 0; i < depth; ++i) {
    const std::string out = std::string("v").append(std::to_string(i));
    b.node(i % 2 ? "Relu" : "Neg", {prev}, {out});
    prev = out;
  }
  b.output(prev);
  return load_model_from_bytes(b.bytes(), ".", "chain.onnx").graph;
}

}  // namespace

TEST(Session, HookSeesEveryNodeInOrderWithItsOutputs) {
  Session session(chain(6));
  std::vector<size_t> seen;
  TensorMap feeds{{"x", Tensor::zeros(DType::Float32, {2, 1024})}};
  feeds["x"].data<float>()[0] = 3.f;
  session.run(feeds, [&](const Node& node, size_t index, const std::vector<const Tensor*>& outputs) {
    seen.push_back(index);
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_NE(outputs[0], nullptr);
    EXPECT_EQ(outputs[0]->shape(), (Shape{2, 1024}));
    EXPECT_EQ(node.outputs[0], std::string("v").append(std::to_string(index)));
  });
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Session, FreesIntermediatesAfterTheirLastConsumer) {
  Session session(chain(40));
  RunStats stats;
  const TensorMap out = session.run({{"x", Tensor::zeros(DType::Float32, {4, 1024})}}, {}, &stats);
  // The feed, the value being produced and the one being consumed: never the whole chain.
  EXPECT_LE(stats.peak_live_values, 3u);
  EXPECT_LE(stats.peak_live_bytes, 3u * 4 * 1024 * sizeof(float));
  EXPECT_EQ(out.at("v39").shape(), (Shape{4, 1024}));
}

TEST(Session, DynamicDimsFollowTheActualInputs) {
  Session session(chain(3));
  for (int64_t batch : {1, 5}) {
    const TensorMap out = session.run({{"x", Tensor::zeros(DType::Float32, {batch, 1024})}});
    EXPECT_EQ(out.at("v2").shape(), (Shape{batch, 1024}));
  }
}

TEST(Session, RejectsFeedsThatDoNotMatchTheDeclaration) {
  Session session(chain(2));
  auto message = [&](TensorMap feeds) {
    try {
      session.run(feeds);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({}).find("graph input 'x' was not given"), std::string::npos);
  EXPECT_NE(message({{"x", Tensor::zeros(DType::Int32, {1, 1024})}}).find("expects float32, got int32"), std::string::npos);
  EXPECT_NE(message({{"x", Tensor::zeros(DType::Float32, {1, 7})}}).find("expects shape Nx1024, got 1x7"),
            std::string::npos);
  EXPECT_NE(message({{"x", Tensor::zeros(DType::Float32, {1, 1024})}, {"y", Tensor::zeros(DType::Float32, {1})}})
                .find("'y' is not an input"),
            std::string::npos);
}

TEST(Session, UnknownOpsFailAtCreationNamingTheNode) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1});
  b.node("FrobnicateTensor", {"x"}, {"y"}, "mystery");
  b.output("y");
  auto graph = load_model_from_bytes(b.bytes(), ".", "m.onnx").graph;
  try {
    Session session(graph);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'mystery' (FrobnicateTensor): operator FrobnicateTensor is not supported"),
              std::string::npos)
        << e.what();
  }
}

namespace {

// x -> Mul 1.001 -> Mul 1.001 -> ... (6 nodes): every node's fp16 rounding shows in the output.
std::shared_ptr<const Graph> scaling_chain() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("k", {}, {1.001f});
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    const std::string out = std::string("v").append(std::to_string(i));
    b.node("Mul", {prev, "k"}, {out});
    prev = out;
  }
  b.output(prev);
  return load_model_from_bytes(b.bytes(), ".", "scaling.onnx").graph;
}

// Every node in fp16 but `fp32_node`.
StreamPlan mixed(const Session& session, size_t nodes, int fp32_node) {
  StreamPlan plan;
  for (size_t i = 0; i < nodes; ++i) {
    const bool kept = static_cast<int>(i) == fp32_node;
    plan.node_config.push_back(kept ? session.default_config() : config_for(Format::FP16));
    plan.computes_in_format.push_back(!kept);
  }
  return plan;
}

}  // namespace

// An incremental run (fix's keep-set search) takes the unchanged nodes' outputs from a recorded run and
// gives, bit for bit, what a run of every node gives.
TEST(Session, ARunReusingARecordEqualsAFullRun) {
  const auto graph = scaling_chain();
  const Session session(graph);
  Tensor x = Tensor::zeros(DType::Float32, {64});
  for (int i = 0; i < 64; ++i) x.data<float>()[i] = 1.f + 0.0123f * static_cast<float>(i);
  const TensorMap feeds{{"x", x}};
  RunRecord all_fp16;
  StreamPlan first = mixed(session, 6, -1);
  first.record = &all_fp16;
  const Tensor before = session.run_streams(feeds, {first}).at(0).at("v5");
  EXPECT_GT(all_fp16.nbytes(), 0u);
  // Node 3 in fp32: nodes 0..2 need not run again.
  StreamPlan full = mixed(session, 6, 3);
  StreamPlan incremental = full;
  incremental.reuse = &all_fp16;
  incremental.reused = {true, true, true, false, false, false};
  const Tensor want = session.run_streams(feeds, {full}).at(0).at("v5");
  const Tensor got = session.run_streams(feeds, {incremental}).at(0).at("v5");
  ASSERT_EQ(got.numel(), want.numel());
  bool changed = false;
  for (int64_t i = 0; i < want.numel(); ++i) {
    EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
    changed = changed || want.data<float>()[i] != before.data<float>()[i];
  }
  EXPECT_TRUE(changed) << "node 3 in fp32 should change the output";
  // The reused values are the record's: a record that differs shows in the output.
  for (Tensor& t : all_fp16.values)
    if (t.defined()) t = Tensor::zeros(DType::Float32, {64});
  incremental.reused = {true, false, false, false, false, false};
  EXPECT_EQ(session.run_streams(feeds, {incremental}).at(0).at("v5").data<float>()[1], 0.f);
}

namespace {

// Two SiLUs, x · sigmoid(x) and sigmoid(x2) · x2 (the Mul's operands either way round), the second x2 = x + 1;
// `shared` also makes the sigmoids graph outputs, so that each has a reader besides its Mul.
std::shared_ptr<const Graph> silus(bool shared) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {-1});
  b.initializer("one", {1}, std::vector<float>{1.f});
  b.node("Sigmoid", {"x"}, {"s"});
  b.node("Mul", {"x", "s"}, {"y"});
  b.node("Add", {"x", "one"}, {"x2"});
  b.node("Sigmoid", {"x2"}, {"s2"});
  b.node("Mul", {"s2", "x2"}, {"y2"});
  b.output("y");
  b.output("y2");
  if (shared) {
    b.output("s");
    b.output("s2");
  }
  return load_model_from_bytes(b.bytes(), ".", "silu.onnx").graph;
}

// Values of every sign and size, some beyond where the sigmoid saturates, in a count no vector width divides.
Tensor silu_input() {
  std::vector<float> x(3001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i % 997) - 498.f) * 0.0731f * (i % 3 ? 1.f : 0.01f);
  x[0] = 0.f, x[1] = -0.f, x[2] = 1e30f, x[3] = -1e30f, x[4] = INFINITY, x[5] = -INFINITY;
  return Tensor::from_vector<float>(x, {static_cast<int64_t>(x.size())});
}

void expect_same_bits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

}  // namespace

// A plain run computes a Sigmoid read only by a Mul of its own input as one Swish node: the sigmoid's tensor is
// never made, and the outputs are those of the two nodes run one after the other (a run with a hook runs every
// node), bit for bit.
TEST(Session, APlainRunComputesSiluAsOneSwishBitForBit) {
  Session session(silus(false));
  const TensorMap feeds{{"x", silu_input()}};
  RunStats fused, every_node;
  const TensorMap plain = session.run(feeds, {}, &fused);
  const TensorMap watched = session.run(
      feeds, [](const Node&, size_t, const std::vector<const Tensor*>&) {}, &every_node);
  for (const char* name : {"y", "y2"}) expect_same_bits(plain.at(name), watched.at(name));
  // Node by node, the second Mul finds y, x2, s2 and y2 alive; fused, s2 is never made.
  EXPECT_EQ(fused.peak_live_values + 1, every_node.peak_live_values);
}

namespace {

std::vector<float> pseudo_random(size_t n, uint32_t seed, float scale, float offset = 0.f) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = offset + scale * (static_cast<float>(seed >> 8) / 16777216.f - 0.5f);
  }
  return v;
}

// Convolutions whose output's only reader maps it value by value, and so on:
//   c1: 3x3 Conv -> BatchNormalization -> Relu                       (r1)
//   c2: 1x1 Conv with bias -> BatchNormalization -> Add(r1) -> Relu  (y, a residual block's end)
//   c3: 1x1 Conv -> Add(per-channel bias first) -> LeakyRelu -> Add(late), where `late` is made after c3 runs:
//       the chain stops there (z)
//   c4: depthwise Conv -> BatchNormalization -> Relu                 (d: epilogues over the whole output)
//   c5: Conv -> Sigmoid (a math-library function: no epilogue)       (s)
//   c6: Conv read twice (by Relu, and as a graph output)             (u, c6)
//   c7: 3x3 Conv of 64 channels on a 4x4 image -> BatchNormalization -> Relu (v)
//   c8: 3x3 Conv in 2 groups -> BatchNormalization -> Relu           (g)
// x is large enough for c1's im2col to take two bands of rows and its GEMMs to split into column blocks over
// threads; c7's GEMM splits into row blocks.
std::shared_ptr<const Graph> conv_chains() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 8, 96, 96});
  b.input("x7", onnx::TensorProto::FLOAT, {1, 32, 4, 4});
  const auto bn = [&](const std::string& name, int64_t c, uint32_t seed) {
    b.initializer(name + "_scale", {c}, pseudo_random(size_t(c), seed, 2.f, 1.f));
    b.initializer(name + "_bias", {c}, pseudo_random(size_t(c), seed + 1, 1.f));
    b.initializer(name + "_mean", {c}, pseudo_random(size_t(c), seed + 2, 0.5f));
    b.initializer(name + "_var", {c}, pseudo_random(size_t(c), seed + 3, 1.f, 1.f));
    return std::vector<std::string>{name + "_scale", name + "_bias", name + "_mean", name + "_var"};
  };
  const auto bn_node = [&](const std::string& in, const std::string& out, int64_t c, uint32_t seed) {
    std::vector<std::string> inputs{in};
    for (const std::string& p : bn(out, c, seed)) inputs.push_back(p);
    b.node("BatchNormalization", inputs, {out});
  };
  b.initializer("w1", {16, 8, 3, 3}, pseudo_random(16 * 8 * 9, 1, 0.5f));
  ModelBuilder::set_ints(b.node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  bn_node("c1", "n1", 16, 10);
  b.node("Relu", {"n1"}, {"r1"});
  b.initializer("w2", {16, 16, 1, 1}, pseudo_random(16 * 16, 2, 0.5f));
  b.initializer("b2", {16}, pseudo_random(16, 3, 1.f));
  b.node("Conv", {"r1", "w2", "b2"}, {"c2"});
  bn_node("c2", "n2", 16, 20);
  b.node("Add", {"n2", "r1"}, {"a2"});
  b.node("Relu", {"a2"}, {"y"});
  b.initializer("w3", {16, 8, 1, 1}, pseudo_random(16 * 8, 4, 0.5f));
  b.initializer("b3", {16, 1, 1}, pseudo_random(16, 5, 1.f));
  b.node("Conv", {"x", "w3"}, {"c3"});
  b.node("Add", {"b3", "c3"}, {"a3"});
  b.node("LeakyRelu", {"a3"}, {"l3"});
  b.node("Relu", {"y"}, {"late"});
  b.node("Add", {"l3", "late"}, {"z"});
  b.initializer("w4", {8, 1, 3, 3}, pseudo_random(8 * 9, 6, 0.5f));
  onnx::NodeProto& depthwise = b.node("Conv", {"x", "w4"}, {"c4"});
  ModelBuilder::set_ints(depthwise, "pads", {1, 1, 1, 1});
  ModelBuilder::set_int(depthwise, "group", 8);
  bn_node("c4", "n4", 8, 30);
  b.node("Relu", {"n4"}, {"d"});
  b.node("Conv", {"x", "w3"}, {"c5"});
  b.node("Sigmoid", {"c5"}, {"s"});
  b.node("Conv", {"x", "w3"}, {"c6"});
  b.node("Relu", {"c6"}, {"u"});
  b.initializer("w7", {64, 32, 3, 3}, pseudo_random(64 * 32 * 9, 8, 0.2f));
  ModelBuilder::set_ints(b.node("Conv", {"x7", "w7"}, {"c7"}), "pads", {1, 1, 1, 1});
  bn_node("c7", "n7", 64, 40);
  b.node("Relu", {"n7"}, {"v"});
  b.initializer("w8", {16, 4, 3, 3}, pseudo_random(16 * 4 * 9, 11, 0.5f));
  onnx::NodeProto& grouped = b.node("Conv", {"x", "w8"}, {"c8"});
  ModelBuilder::set_ints(grouped, "pads", {1, 1, 1, 1});
  ModelBuilder::set_int(grouped, "group", 2);
  bn_node("c8", "n8", 16, 50);
  b.node("Relu", {"n8"}, {"g"});
  for (const char* out : {"y", "z", "d", "s", "u", "c6", "v", "g"}) b.output(out);
  return load_model_from_bytes(b.bytes(), ".", "conv_chains.onnx").graph;
}

}  // namespace

// A plain run computes each convolution's chain of value-by-value readers as epilogues of the convolution
// (Session::epilogue_chains_): the outputs are those of the nodes run one after the other (a run with a hook
// runs every node), bit for bit, and the tensors between them are never made.
TEST(Session, APlainRunComputesConvolutionChainsAsEpiloguesBitForBit) {
  Session session(conv_chains());
  const TensorMap feeds{{"x", Tensor::from_vector<float>(pseudo_random(2 * 8 * 96 * 96, 7, 4.f), {2, 8, 96, 96})},
                        {"x7", Tensor::from_vector<float>(pseudo_random(32 * 16, 9, 4.f), {1, 32, 4, 4})}};
  RunStats fused, every_node;
  const TensorMap plain = session.run(feeds, {}, &fused);
  const TensorMap watched = session.run(
      feeds, [](const Node&, size_t, const std::vector<const Tensor*>&) {}, &every_node);
  for (const char* name : {"y", "z", "d", "s", "u", "c6", "v", "g"})
    expect_same_bits(plain.at(name), watched.at(name));
  // c1: BatchNormalization, Relu; c2: BatchNormalization, Add, Relu; c3: Add, LeakyRelu; c4, c7 and c8:
  // BatchNormalization, Relu.
  EXPECT_EQ(fused.epilogue_nodes, 13u);
  EXPECT_EQ(every_node.epilogue_nodes, 0u);
  // Those values go through every stage: BatchNormalization shifts, Relu clips some, the Adds change them.
  const float* y = plain.at("y").data<float>();
  int64_t zeros = 0;
  for (int64_t i = 0; i < plain.at("y").numel(); ++i) zeros += y[i] == 0.f;
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, plain.at("y").numel());
}

// A sigmoid read elsewhere too (here a graph output) runs as its own node, as does every node of a run whose
// values are stored in fp16, where the sigmoid is rounded before the product.
TEST(Session, SiluRunsAsTwoNodesWhereTheSigmoidIsReadElsewhereOrStoredInFp16) {
  const TensorMap feeds{{"x", silu_input()}};
  const auto hook = [](const Node&, size_t, const std::vector<const Tensor*>&) {};
  {
    Session session(silus(true));
    RunStats plain_stats, hooked_stats;
    const TensorMap plain = session.run(feeds, {}, &plain_stats);
    const TensorMap watched = session.run(feeds, hook, &hooked_stats);
    for (const char* name : {"y", "s", "y2", "s2"}) expect_same_bits(plain.at(name), watched.at(name));
    EXPECT_EQ(plain_stats.peak_live_values, hooked_stats.peak_live_values);
  }
  SessionOptions fp16;
  fp16.precision = Format::FP16;
  Session session(silus(false), fp16);
  RunStats plain_stats, hooked_stats;
  const TensorMap plain = session.run(feeds, {}, &plain_stats);
  const TensorMap watched = session.run(feeds, hook, &hooked_stats);
  expect_same_bits(plain.at("y"), watched.at("y"));
  EXPECT_EQ(plain_stats.peak_live_values, hooked_stats.peak_live_values);
}
