// Shape / data-movement kernels run directly (no model): strided-copy paths against naive index
// arithmetic, and bad data that must fail with a one-line mpa::Error naming the node, never crash.
#include <gtest/gtest.h>

#include <limits>
#include <numeric>

#include "common/parallel.h"
#include "ops/op.h"

using namespace mpa;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();


// Runs one node of `op` at `opset` on the inputs (nullptr = omitted) and returns its outputs.
std::vector<Tensor> run(const std::string& op, int64_t opset, std::vector<const Tensor*> inputs,
                        std::map<std::string, Attribute> attrs = {}, size_t num_outputs = 1) {
  Node node;
  node.name = "n";
  node.op_type = op;
  node.attributes = std::move(attrs);
  // Value names by append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
  auto value_name = [](char prefix, size_t i) { return std::string(1, prefix).append(std::to_string(i)); };
  for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(inputs[i] ? value_name('i', i) : "");
  for (size_t i = 0; i < num_outputs; ++i) node.outputs.push_back(value_name('o', i));
  const KernelFactory* factory = OpRegistry::instance().find("cpu", "", op, opset);
  if (!factory) throw std::logic_error(op + " not registered");
  const std::unique_ptr<OpKernel> kernel = (*factory)(OpInit(node, opset));
  ExecConfig config;
  std::vector<Tensor> outputs;
  KernelContext ctx(node, inputs, outputs, config);
  kernel->compute(ctx);
  return outputs;
}

Tensor iota_float(Shape shape) {
  Tensor t(DType::Float32, std::move(shape));
  std::iota(t.data<float>(), t.data<float>() + t.numel(), 0.f);
  return t;
}
Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

// Expects an mpa::Error whose one-line message names the node.
template <class F> void expect_user_error(F&& f) {
  try {
    f();
    ADD_FAILURE() << "expected an mpa::Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("node 'n'"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// Naive transpose by full index arithmetic.
std::vector<float> naive_transpose(const Tensor& in, const std::vector<int64_t>& perm) {
  const Shape& s = in.shape();
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = s[static_cast<size_t>(perm[i])];
  std::vector<float> result(static_cast<size_t>(in.numel()));
  std::vector<int64_t> in_strides(s.size(), 1);
  for (size_t d = s.size() - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * s[d + 1];
  for (int64_t flat = 0; flat < in.numel(); ++flat) {
    int64_t rest = flat, src = 0;
    for (size_t d = out.size(); d-- > 0;) {
      src += (rest % out[d]) * in_strides[static_cast<size_t>(perm[d])];
      rest /= out[d];
    }
    result[static_cast<size_t>(flat)] = in.data<float>()[src];
  }
  return result;
}

}  // namespace

TEST(ShapeOps, TransposeMatchesNaiveOnRunTiledAndStridedPaths) {
  set_num_threads(2);
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 33, 4, 16}, {0, 2, 1, 3}},  // BERT heads: contiguous inner runs
      {{67, 45}, {1, 0}},              // tiled 2-D transpose
      {{3, 40, 37}, {0, 2, 1}},        // tiled with a batch dim
      {{5, 4, 3, 2}, {3, 1, 2, 0}},    // small, strided
      {{2, 3, 1, 5}, {2, 0, 3, 1}},    // size-1 dims
      {{700, 300}, {1, 0}},            // large enough to split tile bands over threads
      {{4, 300, 260}, {0, 2, 1}},
      {{4, 128, 12, 64}, {0, 2, 1, 3}}};
  for (const auto& [shape, perm] : cases) {
    const Tensor in = iota_float(shape);
    const Tensor out = run("Transpose", 13, {&in}, {{"perm", Attribute::of_ints(perm)}})[0];
    const std::vector<float> expected = naive_transpose(in, perm);
    ASSERT_EQ(out.numel(), in.numel());
    for (int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.data<float>()[i], expected[static_cast<size_t>(i)]) << i;
  }
  set_num_threads(1);
}

TEST(ShapeOps, ReshapeAliasesItsInput) {
  const Tensor in = iota_float({2, 3, 4});
  const Tensor shape = i64({0, -1});
  const Tensor out = run("Reshape", 14, {&in, &shape})[0];
  EXPECT_EQ(out.shape(), (Shape{2, 12}));
  EXPECT_EQ(out.raw(), in.raw());
}

TEST(ShapeOps, SliceWithNegativeStepsAndExtremeBounds) {
  const Tensor in = iota_float({10});
  const Tensor starts = i64({kMax}), ends = i64({kMin}), axes = i64({0}), steps = i64({-3});
  const Tensor out = run("Slice", 13, {&in, &starts, &ends, &axes, &steps})[0];
  EXPECT_EQ(out.to_double_vector(), (std::vector<double>{9, 6, 3, 0}));
  const Tensor huge_step = i64({kMin});
  EXPECT_EQ(run("Slice", 13, {&in, &starts, &ends, &axes, &huge_step})[0].to_double_vector(), (std::vector<double>{9}));
}

// A slice that is one contiguous run of its input (whole rows; one row's span) is a view into the input's
// storage where it holds at least half of it or the input is small; any other is a copy. Either gives the
// sliced values.
TEST(ShapeOps, ContiguousSlicesAliasTheirInput) {
  const Tensor in = iota_float({4, 5});
  const auto slice = [&](std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes) {
    const Tensor s = i64(std::move(starts)), e = i64(std::move(ends)), a = i64(std::move(axes));
    return run("Slice", 13, {&in, &s, &e, &a})[0];
  };
  const float* base = in.data<float>();
  const Tensor rows = slice({1}, {3}, {0});
  EXPECT_EQ(rows.shape(), (Shape{2, 5}));
  EXPECT_EQ(rows.data<float>(), base + 5);
  EXPECT_EQ(rows.to_double_vector()[0], 5);
  EXPECT_EQ(rows.to_double_vector()[9], 14);
  const Tensor span = slice({2, 1}, {3, 4}, {0, 1});  // row 2, columns 1..3
  EXPECT_EQ(span.data<float>(), base + 11);
  EXPECT_EQ(span.to_double_vector(), (std::vector<double>{11, 12, 13}));
  const Tensor columns = slice({1}, {3}, {1});  // every row's columns 1..2: strided, copied
  EXPECT_NE(columns.data<float>(), base + 1);
  EXPECT_EQ(columns.to_double_vector(), (std::vector<double>{1, 2, 6, 7, 11, 12, 16, 17}));
  EXPECT_THROW(in.view(18, {3}), Error);  // past the storage

  // Of an input over 1 MiB, a contiguous slice of less than half is copied, so as not to hold the rest.
  const Tensor large = iota_float({4, 1 << 17});  // 2 MiB
  const Tensor s = i64({1}), e = i64({2}), a = i64({0});
  const Tensor quarter = run("Slice", 13, {&large, &s, &e, &a})[0];
  EXPECT_NE(quarter.data<float>(), large.data<float>() + (1 << 17));
  EXPECT_EQ(quarter.data<float>()[0], float(1 << 17));
  const Tensor e3 = i64({3});
  EXPECT_EQ(run("Slice", 13, {&large, &s, &e3, &a})[0].data<float>(), large.data<float>() + (1 << 17));
}

TEST(ShapeOps, PadReflectBeyondTheInputSizeRepeatsLikeNumpy) {
  const Tensor in = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  const Tensor pads = i64({4, 5});
  const Tensor out = run("Pad", 19, {&in, &pads}, {{"mode", Attribute::of_string("reflect")}})[0];
  EXPECT_EQ(out.to_int64_vector(), (std::vector<int64_t>{1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}));
  const Tensor crop = i64({-1, 1});
  EXPECT_EQ(run("Pad", 19, {&in, &crop})[0].to_int64_vector(), (std::vector<int64_t>{2, 3, 0}));
}

TEST(ShapeOps, BadDataFailsWithOneLineNamingTheNode) {
  const Tensor x = iota_float({2, 3});
  const Tensor idx_big = i64({3}), idx_neg = i64({-4});
  expect_user_error([&] { run("Gather", 13, {&x, &idx_big}, {{"axis", Attribute::of_int(1)}}); });
  expect_user_error([&] { run("Gather", 13, {&x, &idx_neg}, {{"axis", Attribute::of_int(1)}}); });
  const Tensor bad_shape = i64({4, -1}), two_minus = i64({-1, -1}), neg = i64({-2, 3});
  expect_user_error([&] { run("Reshape", 14, {&x, &bad_shape}); });
  expect_user_error([&] { run("Reshape", 14, {&x, &two_minus}); });
  expect_user_error([&] { run("Reshape", 14, {&x, &neg}); });
  const Tensor s0 = i64({0}), e1 = i64({1}), a0 = i64({0}), zero_step = i64({0});
  expect_user_error([&] { run("Slice", 13, {&x, &s0, &e1, &a0, &zero_step}); });
  const Tensor huge = i64({kMax / 2, kMax / 2}), big = i64({int64_t{1} << 40, int64_t{1} << 30});
  expect_user_error([&] { run("ConstantOfShape", 20, {&huge}); });
  expect_user_error([&] { run("ConstantOfShape", 20, {&big}); });
  expect_user_error([&] { run("Expand", 13, {&x, &big}); });
  const Tensor reps = i64({kMax, 2});
  expect_user_error([&] { run("Tile", 13, {&x, &reps}); });
  const Tensor start = Tensor::scalar<float>(0.f), limit = Tensor::scalar<float>(1e30f), delta = Tensor::scalar<float>(1.f),
               zero = Tensor::scalar<float>(0.f);
  expect_user_error([&] { run("Range", 11, {&start, &limit, &delta}); });
  expect_user_error([&] { run("Range", 11, {&start, &limit, &zero}); });
  const Tensor nd_idx = Tensor::from_vector<int64_t>({0, 7}, {1, 2}), upd = Tensor::from_vector<float>({1.f}, {1});
  expect_user_error([&] { run("ScatterND", 18, {&x, &nd_idx, &upd}); });
  expect_user_error([&] { run("GatherND", 13, {&x, &nd_idx}); });
  const Tensor el_idx = Tensor::from_vector<int64_t>({5}, {1, 1}), el_upd = Tensor::from_vector<float>({1.f}, {1, 1});
  expect_user_error([&] { run("ScatterElements", 18, {&x, &el_idx, &el_upd}); });
  expect_user_error([&] { run("GatherElements", 13, {&x, &el_idx}); });
  const Tensor pads = i64({0, kMin, 0, 0});
  expect_user_error([&] { run("Pad", 18, {&x, &pads}); });
  expect_user_error([&] { run("Squeeze", 13, {&x, &a0}); });
  expect_user_error([&] { run("Split", 13, {&x}, {{"axis", Attribute::of_int(1)}}, 2); });
  expect_user_error([&] { run("Concat", 13, {&x, &idx_big}, {{"axis", Attribute::of_int(0)}}); });
  expect_user_error([&] { run("Transpose", 13, {&x}, {{"perm", Attribute::of_ints({0, 0})}}); });
  expect_user_error([&] { run("Unsqueeze", 13, {&x, &idx_big}); });
}

TEST(ShapeOps, ExtremeDiagonalOffsetsAreClamped) {
  const Tensor x = iota_float({3, 4});
  for (int64_t k : {kMin, kMax}) {
    const Tensor kt = Tensor::scalar<int64_t>(k);
    const Tensor upper = run("Trilu", 14, {&x, &kt})[0];  // keeps everything for kMin, nothing for kMax
    EXPECT_EQ(upper.to_double_vector(), k == kMin ? x.to_double_vector() : std::vector<double>(12, 0.0));
    const Tensor eye = run("EyeLike", 22, {&x}, {{"k", Attribute::of_int(k)}})[0];
    EXPECT_EQ(eye.to_double_vector(), std::vector<double>(12, 0.0));
  }
}

TEST(ShapeOps, ConstantOfShapeUsesTheValueType) {
  const Tensor shape = i64({2, 2});
  const Tensor out = run("ConstantOfShape", 20, {&shape}, {{"value", Attribute::of_tensor(Tensor::from_vector<int32_t>({7}, {1}))}})[0];
  EXPECT_EQ(out.dtype(), DType::Int32);
  EXPECT_EQ(out.to_int64_vector(), (std::vector<int64_t>{7, 7, 7, 7}));
}
