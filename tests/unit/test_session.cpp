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
