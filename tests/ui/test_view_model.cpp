// The dashboard's window-free view model (ui/view_model.h): filter language, sorting with missing values,
// hit stepping, value health and the histogram's format zones. No X server or OpenGL needed.
#include <gtest/gtest.h>

#include "ui/view_model.h"

namespace mpa::ui {
namespace {

const std::string kTarget = "fp16";

// One float output whose reference is `reference` and whose fp16 run (isolated and propagated) gave
// `propagated`; fit counts are set directly, as the report stores them.
struct OutputSpec {
  std::vector<double> reference, propagated;
  int64_t overflow = 0, flushed = 0, subnormal = 0, nan = 0;
};

report::NodeStats make_node(std::string name, std::string op, std::optional<OutputSpec> output, double time_ms) {
  report::NodeStats node;
  node.name = std::move(name);
  node.op_type = std::move(op);
  node.time_ms_total = time_ms;
  node.targets[kTarget].verdict = report::Verdict::Safe;
  report::TensorStats tensor;
  tensor.name = node.name + ":0";
  tensor.measured = output.has_value();
  if (output) {
    probes::RangeProbe::Chunk range;
    for (double r : output->reference) range.add(r);
    tensor.range.absorb(range);
    tensor.hist.counts[probes::ExpHistogram::kNan] = output->nan;
    report::TensorTarget& t = tensor.targets[kTarget];
    t.fit.overflow = output->overflow;
    t.fit.flush_to_zero = output->flushed;
    t.fit.subnormal = output->subnormal;
    t.fit.nonzero = static_cast<int64_t>(output->reference.size());
    const probes::Divergence::Params params(Format::FP16, probes::Tolerances{});
    probes::Divergence::Chunk divergence;
    for (size_t i = 0; i < output->reference.size(); ++i) divergence.add(output->reference[i], output->propagated[i], params);
    t.propagated.absorb(divergence);
    t.isolated.absorb(divergence);
  }
  node.tensors.push_back(std::move(tensor));
  return node;
}

// Node 0 has no float output (every figure missing); the others differ in each figure.
ReportModel make_model() {
  report::Report r;
  r.config.targets = {kTarget};
  r.nodes.push_back(make_node("embed/Gather", "Gather", std::nullopt, 0.5));
  // SQNR 20 dB (error 0.1 on 1.0), 1 overflow of 4.
  r.nodes.push_back(make_node("attn/MatMul_qk", "MatMul", OutputSpec{{1, 1, 1, 1e5}, {1.1, 1.1, 1.1, 1e5 * 1.1}, 1, 0, 0, 0}, 3.0));
  // SQNR 40 dB, 2 of 4 flushed (50 %), 1 subnormal.
  r.nodes.push_back(make_node("attn/Softmax", "Softmax", OutputSpec{{1, 1, 1, 1e-9}, {1.01, 1.01, 0.99, 0}, 0, 2, 1, 0}, 2.0));
  // Exact, absmax 8.
  r.nodes.push_back(make_node("mask/scale", "Mul", OutputSpec{{8, 2, 2, 2}, {8, 2, 2, 2}, 0, 0, 0, 3}, 1.0));
  for (size_t i = 0; i < r.nodes.size(); ++i) r.nodes[i].index = static_cast<int64_t>(i);
  return ReportModel(std::move(r), "synthetic.json");
}

std::vector<int> rows_for(const ReportModel& model, const std::string& filter_text, std::vector<SortKey> keys = {}) {
  return filtered_sorted_rows(model, kTarget, NodeFilter::parse(filter_text), keys);
}

TEST(NodeFilterTest, EmptyFilterKeepsExecutionOrder) {
  EXPECT_EQ(rows_for(make_model(), ""), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(rows_for(make_model(), "   "), (std::vector<int>{0, 1, 2, 3}));
}

TEST(NodeFilterTest, RegexOverNameAndOpIsCaseInsensitive) {
  const ReportModel model = make_model();
  EXPECT_EQ(rows_for(model, "^attn/"), (std::vector<int>{1, 2}));
  EXPECT_EQ(rows_for(model, "matmul|GATHER"), (std::vector<int>{0, 1}));
  EXPECT_EQ(rows_for(model, "^mul$"), (std::vector<int>{3}));  // op type only
}

TEST(NodeFilterTest, InvalidRegexFallsBackToSubstring) {
  report::Report r;
  r.config.targets = {kTarget};
  r.nodes.push_back(make_node("block[0/Add", "Add", std::nullopt, 0));
  r.nodes.push_back(make_node("block1/Add", "Add", std::nullopt, 0));
  const ReportModel model(std::move(r), "x.json");
  const NodeFilter filter = NodeFilter::parse("BLOCK[0");
  EXPECT_TRUE(filter.error().empty());
  EXPECT_EQ(filtered_sorted_rows(model, kTarget, filter, {}), (std::vector<int>{0}));
}

TEST(NodeFilterTest, EachNumericField) {
  const ReportModel model = make_model();
  EXPECT_EQ(rows_for(model, "index>=2"), (std::vector<int>{2, 3}));
  EXPECT_EQ(rows_for(model, "absmax>100"), (std::vector<int>{1}));
  EXPECT_EQ(rows_for(model, "headroom<0"), (std::vector<int>{1}));    // 1e5 overflows fp16
  EXPECT_EQ(rows_for(model, "overflow>0"), (std::vector<int>{1}));
  EXPECT_EQ(rows_for(model, "flush==50"), (std::vector<int>{2}));     // percent
  EXPECT_EQ(rows_for(model, "iso.sqnr_db<30"), (std::vector<int>{1}));
  EXPECT_EQ(rows_for(model, "prop.sqnr_db>30"), (std::vector<int>{2, 3}));
  EXPECT_EQ(rows_for(model, "cosine!=1"), (std::vector<int>{2}));     // the uneven errors bend its direction
  EXPECT_EQ(rows_for(model, "time<=1"), (std::vector<int>{0, 3}));
}

TEST(NodeFilterTest, EachComparison) {
  const ReportModel model = make_model();
  EXPECT_EQ(rows_for(model, "index>1"), (std::vector<int>{2, 3}));
  EXPECT_EQ(rows_for(model, "index>=1"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(rows_for(model, "index<1"), (std::vector<int>{0}));
  EXPECT_EQ(rows_for(model, "index<=1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(rows_for(model, "index==1"), (std::vector<int>{1}));
  EXPECT_EQ(rows_for(model, "index!=1"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(rows_for(model, "INDEX==1.0e0"), (std::vector<int>{1}));  // field names case-insensitive
}

TEST(NodeFilterTest, MissingValuesMatchNoPredicate) {
  const ReportModel model = make_model();
  // Node 0 has no measured output: its SQNR is NaN, so neither side of a comparison holds.
  EXPECT_EQ(rows_for(model, "iso.sqnr_db<1000"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(rows_for(model, "iso.sqnr_db>=-1000"), (std::vector<int>{1, 2, 3}));
}

TEST(NodeFilterTest, TermsCombineWithAnd) {
  const ReportModel model = make_model();
  EXPECT_EQ(rows_for(model, "attn prop.sqnr_db>30"), (std::vector<int>{2}));
  EXPECT_EQ(rows_for(model, "index>0 index<3 soft"), (std::vector<int>{2}));
  EXPECT_TRUE(rows_for(model, "overflow>0 flush>0").empty());
}

TEST(NodeFilterTest, MalformedPredicatesReportAnErrorAndMatchNothing) {
  const ReportModel model = make_model();
  for (const char* text : {"overflow>", "overflow>abc", "absmax>=1e", "headroom<<2", "bogus>3", "attn cosine==0.5x"}) {
    const NodeFilter filter = NodeFilter::parse(text);
    EXPECT_FALSE(filter.error().empty()) << text;
    EXPECT_TRUE(filtered_sorted_rows(model, kTarget, filter, {}).empty()) << text;
  }
}

TEST(NodeSortTest, NumericColumnsPutMissingValuesLastBothWays) {
  const ReportModel model = make_model();
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Isolated, true}}), (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Isolated, false}}), (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Headroom, true}}), (std::vector<int>{1, 3, 2, 0}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Headroom, false}}), (std::vector<int>{2, 3, 1, 0}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Cosine, false}}), (std::vector<int>{1, 3, 2, 0}));
}

TEST(NodeSortTest, TextColumnsAndDirections) {
  const ReportModel model = make_model();
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Name, true}}), (std::vector<int>{1, 2, 0, 3}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Op, false}}), (std::vector<int>{2, 3, 1, 0}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Index, false}}), (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Health, false}}), (std::vector<int>{3, 1, 0, 2}));  // NaN 3, overflow 1
}

TEST(NodeSortTest, TiesAreStableAndFallToTheNextKey) {
  const ReportModel model = make_model();
  // Overflow ties at 0 for nodes 0, 2, 3: execution order among them, or the next key's order.
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Overflow, true}}), (std::vector<int>{0, 2, 3, 1}));
  EXPECT_EQ(rows_for(model, "", {{NodeColumn::Overflow, true}, {NodeColumn::Time, false}}), (std::vector<int>{2, 3, 0, 1}));
  EXPECT_EQ(rows_for(model, "attn", {{NodeColumn::Verdict, true}}), (std::vector<int>{1, 2}));
}

TEST(NextHitTest, StepsThroughHitsAndWraps) {
  const std::vector<int> hits{5, 2, 9};
  EXPECT_EQ(next_hit(hits, -1), 5);  // nothing selected: the first hit
  EXPECT_EQ(next_hit(hits, 7), 5);   // selection is no hit: the first hit
  EXPECT_EQ(next_hit(hits, 5), 2);
  EXPECT_EQ(next_hit(hits, 2), 9);
  EXPECT_EQ(next_hit(hits, 9), 5);   // wraps around
  EXPECT_EQ(next_hit({4}, 4), 4);
  EXPECT_EQ(next_hit({}, 3), -1);
}

TEST(ValueHealthTest, CountsReferenceValuesInTheTarget) {
  const ReportModel model = make_model();
  const ValueHealth overflowing = node_health(model.node(1), kTarget);
  EXPECT_EQ(overflowing.inf_or_overflow, 1);
  EXPECT_EQ(overflowing.normal, 3);
  const ValueHealth flushing = node_health(model.node(2), kTarget);
  EXPECT_EQ(flushing.flushed, 2);
  EXPECT_EQ(flushing.subnormal, 1);
  EXPECT_EQ(flushing.normal, 1);
  EXPECT_EQ(node_health(model.node(3), kTarget).nan, 3);
  const ValueHealth unmeasured = node_health(model.node(0), kTarget);
  EXPECT_EQ(unmeasured.nan + unmeasured.inf_or_overflow + unmeasured.subnormal + unmeasured.flushed + unmeasured.normal, 0);
  EXPECT_EQ(node_health(model.node(1), "bf16").inf_or_overflow, 0);  // a target the report lacks
}

// Below flush_log2 values round to zero (half the smallest subnormal), below normal_log2 they are subnormal,
// above max_log2 (log2 of the largest finite value) they overflow.
TEST(FormatZonesTest, BoundariesPerFormat) {
  struct Expected {
    Format format;
    double flush_log2, normal_log2, max_finite;
  };
  for (const Expected& e : {Expected{Format::FP16, -25, -14, 65504}, Expected{Format::BF16, -134, -126, 3.3895313892515355e38},
                            Expected{Format::FP8E4M3FN, -10, -6, 448}, Expected{Format::FP8E5M2, -17, -14, 57344}}) {
    const FormatZones zones = format_zones(e.format);
    EXPECT_DOUBLE_EQ(zones.flush_log2, e.flush_log2) << static_cast<int>(e.format);
    EXPECT_DOUBLE_EQ(zones.normal_log2, e.normal_log2) << static_cast<int>(e.format);
    EXPECT_NEAR(zones.max_log2, std::log2(e.max_finite), 1e-9) << static_cast<int>(e.format);
    EXPECT_LT(zones.flush_log2, zones.normal_log2);
    EXPECT_LT(zones.normal_log2, zones.max_log2);
  }
}

// The dashboard states headroom as the report does: none for FP8 under absmax scaling (the scale puts the
// absmax on the format's max), log2(max / absmax) otherwise.
TEST(ReportModelTest, HeadroomFollowsTheReportsFp8Scaling) {
  for (const char* scaling : {"none", "absmax"}) {
    report::Report r;
    r.config.targets = {"fp8e4m3"};
    r.config.fp8_scaling = scaling;
    report::NodeStats node = make_node("scale", "Mul", OutputSpec{{8, 2, 2, 2}, {8, 2, 2, 2}, 0, 0, 0, 0}, 1.0);
    node.targets["fp8e4m3"] = node.targets.at(kTarget);
    node.tensors[0].targets["fp8e4m3"] = node.tensors[0].targets.at(kTarget);
    r.nodes.push_back(std::move(node));
    const ReportModel model(std::move(r), "fp8.json");
    const double headroom = model.target_view("fp8e4m3").nodes.at(0).headroom_bits;
    EXPECT_DOUBLE_EQ(headroom, std::string(scaling) == "absmax" ? 0.0 : std::log2(448.0 / 8.0)) << scaling;
  }
}

}  // namespace
}  // namespace mpa::ui
