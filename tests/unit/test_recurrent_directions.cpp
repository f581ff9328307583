// Bidirectional recurrent ops run their two directions at once, one per thread, where there are two threads
// (ops/recurrent.h, for_each_direction): the outputs are the same bits on one thread or two, in fp32 and in
// fp16, with recurrent GEMMs large enough to be split into blocks.
#include <gtest/gtest.h>

#include <cstring>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/audit_helpers.h"
#include "support/model_builder.h"

using namespace mpa;
using mpa::test::ModelBuilder;
using mpa::test::values;

namespace {

constexpr int64_t kSeq = 6, kBatch = 4, kInput = 8, kHidden = 128;

// X [6, 4, 8] -> op (bidirectional, hidden 128) -> Y, Y_h. Each step's recurrence is [4, 128] x [128, gates x
// 128]: at least 256K multiply-adds for LSTM and GRU, so the GEMM is split into blocks over the threads.
std::shared_ptr<const Graph> bidirectional(const std::string& op, int64_t gates) {
  ModelBuilder b(14);
  b.input("x", onnx::TensorProto::FLOAT, {kSeq, kBatch, kInput});
  const int64_t width = gates * kHidden;
  b.initializer("w", {2, width, kInput}, values(static_cast<size_t>(2 * width * kInput), 0.3f, 1));
  b.initializer("r", {2, width, kHidden}, values(static_cast<size_t>(2 * width * kHidden), 0.1f, 2));
  b.initializer("b", {2, 2 * width}, values(static_cast<size_t>(4 * width), 0.1f, 3));
  onnx::NodeProto& n = b.node(op, {"x", "w", "r", "b"}, {"y", "y_h"}, op);
  ModelBuilder::set_int(n, "hidden_size", kHidden);
  ModelBuilder::set_string(n, "direction", "bidirectional");
  b.output("y").output("y_h");
  return load_model_from_bytes(b.bytes(), ".", op + ".onnx").graph;
}

TensorMap run(const std::shared_ptr<const Graph>& graph, int threads, Format precision) {
  SessionOptions o;
  o.threads = threads;
  o.precision = precision;
  const Session s(graph, o);
  const std::vector<float> x = values(static_cast<size_t>(kSeq * kBatch * kInput), 1.f, 4);
  return s.run({{"x", Tensor::from_vector(x, {kSeq, kBatch, kInput})}});
}

}  // namespace

TEST(RecurrentDirections, SameBitsOnOneThreadOrTwo) {
  for (const auto& [op, gates] : {std::pair<const char*, int64_t>{"LSTM", 4}, {"GRU", 3}, {"RNN", 1}})
    for (const Format precision : {Format::FP32, Format::FP16}) {
      const auto graph = bidirectional(op, gates);
      const TensorMap one = run(graph, 1, precision), two = run(graph, 2, precision);
      for (const char* name : {"y", "y_h"}) {
        const Tensor &a = one.at(name), &b = two.at(name);
        ASSERT_EQ(a.shape(), b.shape()) << op << " " << name;
        EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.nbytes()), 0)
            << op << " " << name << " " << format_name(precision);
        EXPECT_GT(a.numel(), 0);
      }
    }
}
