// Elementwise ops run directly (no model): the behaviour the ONNX node tests do not pin down: integer
// division and modulo signs, float->int casts out of range, legacy (opset < 7) broadcasting, Clip across
// versions, one rounding for 16-bit variadic ops, split broadcast runs, and bad data that must fail
// with a one-line mpa::Error naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "common/parallel.h"
#include "backends/cpu/broadcast_loops.h"
#include "ops/op.h"

using namespace mpa;

namespace {


// Runs one node of `op` at `opset` on the inputs (nullptr = omitted) and returns its output.
Tensor run(const std::string& op, int64_t opset, std::vector<const Tensor*> inputs,
           std::map<std::string, Attribute> attrs = {}) {
  Node node;
  node.name = "n";
  node.op_type = op;
  node.attributes = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(inputs[i] ? std::string(1, 'i').append(std::to_string(i)) : "");
  node.outputs.push_back("o");
  const KernelFactory* factory = OpRegistry::instance().find("cpu", "", op, opset);
  if (!factory) throw std::logic_error(op + " not registered");
  const std::unique_ptr<OpKernel> kernel = (*factory)(OpInit(node, opset));
  ExecConfig config;
  std::vector<Tensor> outputs;
  KernelContext ctx(node, inputs, outputs, config);
  kernel->compute(ctx);
  return outputs[0];
}

template <class T> std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

std::unique_ptr<OpKernel> kernel_of(const std::string& op, int64_t opset, size_t inputs,
                                    std::map<std::string, Attribute> attrs = {}) {
  Node node;
  node.name = "n";
  node.op_type = op;
  node.attributes = std::move(attrs);
  for (size_t i = 0; i < inputs; ++i) node.inputs.push_back("i" + std::to_string(i));
  node.outputs.push_back("o");
  return (*OpRegistry::instance().find("cpu", "", op, opset))(OpInit(node, opset));
}

// `op` run as an epilogue on input `from` (= x) over x's channels in blocks of uneven lengths, or nullopt where
// the kernel refuses to be one.
std::optional<std::vector<float>> as_epilogue(const std::string& op, int64_t opset, size_t from,
                                              std::vector<const Tensor*> inputs, const Tensor& x,
                                              std::map<std::string, Attribute> attrs = {}) {
  const std::unique_ptr<OpKernel> kernel = kernel_of(op, opset, inputs.size(), std::move(attrs));
  inputs[from] = nullptr;  // an epilogue never reads the producer's output as an input
  const std::unique_ptr<Epilogue> epilogue = kernel->as_epilogue(from, inputs, x.shape());
  if (!epilogue) return std::nullopt;
  std::vector<float> v = values<float>(x);
  const int64_t channels = x.dim(1), plane = x.numel() / (x.dim(0) * channels);
  for (int64_t p = 0; p < x.dim(0) * channels; ++p)
    for (int64_t begin = 0, len = 1; begin < plane; begin += len, len = len * 3 + 2) {
      const int64_t offset = p * plane + begin, n = std::min(len, plane - begin);
      epilogue->apply(v.data() + offset, n, p % channels, offset);
    }
  return v;
}

}  // namespace

// Each elementwise op as an epilogue computes what the node computes, bit for bit, over blocks of any length;
// the broadcasts an epilogue cannot follow, outputs of another type and training statistics are refused.
TEST(Elementwise, EpiloguesComputeWhatTheNodeComputes) {
  std::vector<float> xs(2 * 3 * 37);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = (static_cast<float>(i % 23) - 11.f) * 0.37f;
  const Tensor x = Tensor::from_vector<float>(xs, {2, 3, 37});
  const Tensor same = Tensor::from_vector<float>(std::vector<float>(xs.rbegin(), xs.rend()), {2, 3, 37});
  const Tensor per_channel = Tensor::from_vector<float>({0.5f, -1.25f, 3.f}, {3, 1});
  const Tensor one = Tensor::from_vector<float>({-0.75f}, {1});
  const Tensor last_dim = Tensor::from_vector<float>(std::vector<float>(37, 2.f), {37});
  const auto same_as_node = [&](const std::string& op, std::vector<const Tensor*> inputs, size_t from,
                                std::map<std::string, Attribute> attrs = {}) {
    const std::optional<std::vector<float>> got = as_epilogue(op, 17, from, inputs, x, attrs);
    ASSERT_TRUE(got) << op;
    const std::vector<float> want = values<float>(run(op, 17, inputs, attrs));
    ASSERT_EQ(got->size(), want.size());
    EXPECT_EQ(std::memcmp(got->data(), want.data(), want.size() * sizeof(float)), 0) << op;
  };
  same_as_node("Relu", {&x}, 0);
  same_as_node("LeakyRelu", {&x}, 0, {{"alpha", Attribute::of_float(0.3f)}});
  same_as_node("Add", {&x, &same}, 0);
  same_as_node("Sub", {&per_channel, &x}, 1);
  same_as_node("Div", {&x, &one}, 0);
  const Tensor scale = Tensor::from_vector<float>({1.5f, 0.25f, -2.f}, {3});
  const Tensor bias = Tensor::from_vector<float>({0.1f, -0.2f, 0.3f}, {3});
  const Tensor mean = Tensor::from_vector<float>({0.5f, -1.f, 2.f}, {3});
  const Tensor var = Tensor::from_vector<float>({0.3f, 2.f, 0.01f}, {3});
  same_as_node("BatchNormalization", {&x, &scale, &bias, &mean, &var}, 0);

  EXPECT_FALSE(as_epilogue("Add", 17, 0, {&x, &last_dim}, x));  // broadcast along the last dimension
  const Tensor wider = Tensor::from_vector<float>(std::vector<float>(4 * 2 * 3 * 37), {4, 2, 3, 37});
  EXPECT_FALSE(as_epilogue("Add", 17, 0, {&x, &wider}, x));  // the output would be larger than x
  EXPECT_FALSE(as_epilogue("Greater", 17, 0, {&x, &one}, x));  // a bool output
  EXPECT_FALSE(as_epilogue("BatchNormalization", 15, 0, {&x, &scale, &bias, &mean, &var}, x,
                           {{"training_mode", Attribute::of_int(1)}}));
}

TEST(Elementwise, BroadcastSpansCoverEveryOutputOnceWithTheRightOffsets) {
  set_num_threads(2);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5, 7}, {5, 7}}, {{5, 7}, {}}, {{3, 1, 4}, {1, 5, 1}}, {{2, 3}, {3}}, {{4, 1}, {1, 3}}, {{0, 3}, {3}}};
  for (const auto& [a, b] : cases) {
    const Shape out = broadcast_shapes({a, b});
    const int64_t n = shape_numel(out);
    std::vector<int> visits(static_cast<size_t>(n), 0);
    std::vector<int64_t> a_off(static_cast<size_t>(n)), b_off(static_cast<size_t>(n));
    for_each_broadcast_span(out, {a, b}, 3, [&](int64_t o, const int64_t* off, const int64_t* step, int64_t len) {
      for (int64_t i = 0; i < len; ++i) {
        ++visits[static_cast<size_t>(o + i)];
        a_off[static_cast<size_t>(o + i)] = off[0] + i * step[0];
        b_off[static_cast<size_t>(o + i)] = off[1] + i * step[1];
      }
    });
    // Reference offsets from full index arithmetic.
    for (int64_t flat = 0; flat < n; ++flat) {
      EXPECT_EQ(visits[static_cast<size_t>(flat)], 1);
      int64_t rem = flat, ra = 0, rb = 0, sa = 1, sb = 1;
      for (size_t d = out.size(); d-- > 0;) {
        const int64_t idx = rem % out[d];
        rem /= out[d];
        const size_t da = d + a.size() - out.size(), db = d + b.size() - out.size();
        if (d + a.size() >= out.size()) ra += (a[da] == 1 ? 0 : idx) * sa, sa *= a[da];
        if (d + b.size() >= out.size()) rb += (b[db] == 1 ? 0 : idx) * sb, sb *= b[db];
      }
      EXPECT_EQ(a_off[static_cast<size_t>(flat)], ra) << shape_str(a) << " " << shape_str(b) << " at " << flat;
      EXPECT_EQ(b_off[static_cast<size_t>(flat)], rb) << shape_str(a) << " " << shape_str(b) << " at " << flat;
    }
  }
  set_num_threads(1);
}

TEST(Elementwise, IntegerDivisionTruncatesAndRejectsZero) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const Tensor a = Tensor::from_vector<int32_t>({7, -7, 7, -7, kMin}, {5});
  const Tensor b = Tensor::from_vector<int32_t>({2, 2, -2, -2, -1}, {5});
  EXPECT_EQ(values<int32_t>(run("Div", 14, {&a, &b})), (std::vector<int32_t>{3, -3, -3, 3, kMin}));
  EXPECT_EQ(values<int32_t>(run("Mod", 13, {&a, &b})), (std::vector<int32_t>{1, 1, -1, -1, 0}));
  EXPECT_EQ(values<int32_t>(run("Mod", 13, {&a, &b}, {{"fmod", Attribute::of_int(1)}})), (std::vector<int32_t>{1, -1, 1, -1, 0}));
  const Tensor zero = Tensor::from_vector<int32_t>({1, 0, 1, 1, 1}, {5});
  try {
    run("Div", 14, {&a, &zero});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "node 'n' (Div): integer division by zero");
  }
}

TEST(Elementwise, FloatModFollowsTheDivisorSignUnlessFmod) {
  const Tensor a = Tensor::from_vector<float>({-4.5f, 4.5f}, {2});
  const Tensor b = Tensor::from_vector<float>({2.0f, -2.0f}, {2});
  EXPECT_EQ(values<float>(run("Mod", 13, {&a, &b})), (std::vector<float>{1.5f, -1.5f}));
  EXPECT_EQ(values<float>(run("Mod", 13, {&a, &b}, {{"fmod", Attribute::of_int(1)}})), (std::vector<float>{-0.5f, 0.5f}));
}

TEST(Elementwise, CastFloatToIntTruncatesAndDefinesOutOfRange) {
  const Tensor x = Tensor::from_vector<float>({3.7f, -3.7f, 300.0f, -1.0f, NAN, 1e30f}, {6});
  EXPECT_EQ(values<int32_t>(run("Cast", 21, {&x}, {{"to", Attribute::of_int(6)}})), (std::vector<int32_t>{3, -3, 300, -1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(run("Cast", 21, {&x}, {{"to", Attribute::of_int(2)}})), (std::vector<uint8_t>{3, 253, 44, 255, 0, 0}));
  EXPECT_EQ(values<bool>(run("Cast", 1, {&x}, {{"to", Attribute::of_string("BOOL")}})),
            (std::vector<bool>{true, true, true, true, true, true}));
  EXPECT_EQ(run("Cast", 21, {&x}, {{"to", Attribute::of_int(17)}}).dtype(), DType::Float8E4M3FN);
  EXPECT_THROW(run("Cast", 21, {&x}, {{"to", Attribute::of_int(14)}}), UnsupportedType);  // complex64
  EXPECT_THROW(run("Cast", 21, {&x}, {{"to", Attribute::of_int(8)}}), UnsupportedType);   // string
  EXPECT_THROW(run("Cast", 21, {&x}, {{"to", Attribute::of_int(999)}}), Error);
}

TEST(Elementwise, LegacyBroadcastAlignsAtAxis) {
  const Tensor a = Tensor::zeros(DType::Float32, {2, 3, 2});
  const Tensor b = Tensor::from_vector<float>({1, 2, 3}, {3});
  const Tensor y = run("Add", 6, {&a, &b}, {{"broadcast", Attribute::of_int(1)}, {"axis", Attribute::of_int(1)}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EXPECT_THROW(run("Add", 7, {&a, &b}), Error);  // numpy rules from opset 7: 2 vs 3 do not broadcast
}

TEST(Elementwise, ClipBoundsFromAttributesThenInputs) {
  const Tensor x = Tensor::from_vector<float>({-5, 0.5f, 5, NAN}, {4});
  const Tensor y6 = run("Clip", 6, {&x}, {{"min", Attribute::of_float(-1)}, {"max", Attribute::of_float(1)}});
  EXPECT_EQ(values<float>(y6)[0], -1);
  EXPECT_EQ(values<float>(y6)[2], 1);
  EXPECT_TRUE(std::isnan(values<float>(y6)[3]));
  const Tensor lo = Tensor::scalar<float>(2), hi = Tensor::scalar<float>(1);
  EXPECT_EQ(values<float>(run("Clip", 13, {&x, &lo, &hi}))[0], 1);  // min > max: everything becomes max
  EXPECT_EQ(values<float>(run("Clip", 13, {&x, nullptr, &hi}))[0], -5);
  const Tensor wrong = Tensor::scalar<double>(1);
  EXPECT_THROW(run("Clip", 13, {&x, &wrong}), Error);
}

TEST(Elementwise, HalfSumRoundsOnce) {
  // 1 + 2^-11 + 2^-11: pairwise fp16 rounding gives 1 (ties to even twice); one rounding gives 1 + 2^-10.
  const Tensor one = Tensor::scalar<Float16>(Float16{0x3C00});
  const Tensor tiny = Tensor::scalar<Float16>(Float16{0x1000});
  EXPECT_EQ(run("Sum", 13, {&one, &tiny, &tiny}).data<Float16>()[0].bits, 0x3C01);
  EXPECT_EQ(run("Add", 14, {&one, &tiny}).data<Float16>()[0].bits, 0x3C00);
}

TEST(Elementwise, BadDataFailsWithTheNodeNamed) {
  const Tensor i = Tensor::from_vector<int32_t>({1, 2}, {2});
  const Tensor f = Tensor::from_vector<float>({1, 2}, {2});
  const Tensor f3 = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_THROW(run("Sqrt", 13, {&i}), Error);
  EXPECT_THROW(run("Add", 14, {&i, &f}), Error);
  EXPECT_THROW(run("Mul", 14, {&f, &f3}), Error);
  EXPECT_THROW(run("Where", 16, {&f, &f, &f}), Error);
  EXPECT_THROW(run("BitShift", 11, {&i, &i}, {{"direction", Attribute::of_string("LEFT")}}), Error);  // signed
  try {
    run("Gelu", 20, {&f}, {{"approximate", Attribute::of_string("fast")}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("node 'n' (Gelu): ", 0), 0u) << e.what();
  }
}
