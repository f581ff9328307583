// Probe figures checked against values computed by hand here (fp16 roundings written out as exact
// binary fractions), not by the code under test.
#include <gtest/gtest.h>

#include <cmath>

#include "audit/auditor.h"
#include "model/loader.h"
#include "support/model_builder.h"

using namespace mpa;

TEST(ProbeFigures, RangeFitAndDivergenceMatchHandComputation) {
  mpa::test::ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {8});
  b.node("Identity", {"x"}, {"y"}, "copy");
  b.output("y");
  const std::vector<float> x = {1.f / 3, 0.1f, 3.f, -2.5f, 70000.f, 1e-8f, 0.f, 1e-6f};
  // fp16 roundings: 1/3 -> 1365 * 2^-12, 0.1 -> 1638 * 2^-14, 3 and -2.5 exact, 70000 -> inf,
  // 1e-8 -> 0 (below 2^-25), 0 -> 0, 1e-6 -> 17 * 2^-24 (subnormal).
  const std::vector<double> fp16 = {1365.0 / 4096, 1638.0 / 16384, 3, -2.5, INFINITY, 0, 0, 17.0 / 16777216};

  const Model model = load_model_from_bytes(b.bytes(), ".", "figures.onnx");
  Auditor auditor(model.graph, AuditOptions{});
  auditor.observe({{"x", Tensor::from_vector<float>(x, {8})}}, 0);
  report::Report rep;
  rep.config.targets = {"fp16"};
  auditor.fill(rep);
  const report::TensorStats& t = rep.nodes.at(0).tensors.at(0);

  double sum = 0, sum_sq = 0;
  for (float v : x) sum += v, sum_sq += static_cast<double>(v) * v;
  const double mean = sum / 8;
  EXPECT_EQ(t.range.count, 8);
  EXPECT_EQ(t.range.min, -2.5);
  EXPECT_EQ(t.range.max, 70000);
  EXPECT_EQ(t.range.absmax(), 70000);
  EXPECT_EQ(t.range.zeros, 1);
  EXPECT_DOUBLE_EQ(t.range.mean(), mean);
  EXPECT_NEAR(t.range.std_dev(), std::sqrt(sum_sq / 8 - mean * mean), 1e-9);

  const report::TensorTarget& f = t.targets.at("fp16");
  EXPECT_EQ(f.fit.overflow, 1);       // 70000 > 65504
  EXPECT_EQ(f.fit.flush_to_zero, 1);  // 1e-8
  EXPECT_EQ(f.fit.subnormal, 1);      // 1e-6
  EXPECT_NEAR(probes::FormatFit::headroom_bits(Format::FP16, t.range.absmax()), std::log2(65504.0 / 70000.0), 1e-12);

  // Propagated = the input stored in fp16, unchanged by Identity. Inf where the reference is finite is
  // counted apart; the error figures cover the other 7 values.
  double signal = 0, noise = 0, cross = 0, target_sq = 0, max_abs = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isinf(fp16[i])) continue;
    const double r = x[i], e = fp16[i] - r;
    signal += r * r;
    noise += e * e;
    cross += r * fp16[i];
    target_sq += fp16[i] * fp16[i];
    max_abs = std::max(max_abs, std::fabs(e));
  }
  const probes::Divergence& d = f.propagated;
  EXPECT_EQ(d.inf, 1);
  EXPECT_EQ(d.nan, 0);
  EXPECT_EQ(d.compared, 7);
  EXPECT_DOUBLE_EQ(d.max_abs, max_abs);
  EXPECT_NEAR(d.sqnr_db(), 10 * std::log10(signal / noise), 1e-9);
  EXPECT_NEAR(d.cosine(), cross / std::sqrt(signal * target_sq), 1e-12);
  EXPECT_NEAR(d.rmse(), std::sqrt(noise / 7), 1e-15);
  // Storing is all the propagated run did, so the two agree exactly.
  EXPECT_EQ(f.stored.sqnr_db(), d.sqnr_db());

  // The verdict names the overflow with its numbers.
  const auto& reasons = rep.nodes.at(0).targets.at("fp16").reasons;
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons.front().code, "overflow");
  EXPECT_EQ(reasons.front().message,
            "reference absmax 7e+04 exceeds fp16 max 65504 in 1 of 8 values; Inf reaches output 'y': 1 of 8 values");
}

// A Constant node hands its value to every run: rounding the target run's output must not round the value
// the reference run reads (an audit once turned 0.1 into fp16's 0.0999755859375 for every later reader).
TEST(ProbeFigures, TargetRunsLeaveSharedConstantValuesAlone) {
  mpa::test::ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4});
  onnx::NodeProto& constant = b.node("Constant", {}, {"c"}, "tenth");
  onnx::AttributeProto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(0.1f);
  b.node("Add", {"x", "c"}, {"y"}, "add");
  b.output("y");
  const Model model = load_model_from_bytes(b.bytes(), ".", "constant.onnx");
  Auditor auditor(model.graph, AuditOptions{});
  const std::vector<float> x = {1.f, 2.f, 3.f, 4.f};
  for (int64_t sample = 0; sample < 2; ++sample) auditor.observe({{"x", Tensor::from_vector<float>(x, {4})}}, sample);
  report::Report rep;
  rep.config.targets = {"fp16"};
  auditor.fill(rep);
  EXPECT_EQ(rep.nodes.at(0).tensors.at(0).range.max, static_cast<double>(0.1f));
  const report::TensorStats& sum = rep.nodes.at(1).tensors.at(0);
  EXPECT_EQ(sum.range.max, static_cast<double>(4.f + 0.1f));
  EXPECT_EQ(sum.range.min, static_cast<double>(1.f + 0.1f));
}
