#include <gtest/gtest.h>

#include "model/loader.h"
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
