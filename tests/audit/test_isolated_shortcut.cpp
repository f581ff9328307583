// The audit takes the stored reference output as the isolated output of ops whose outputs select input
// values (OpTraits::rounding_commutes) instead of running them. Checked here against actually running each
// such node on its reference inputs stored in the format, for every format the shortcut serves.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "audit/auditor.h"
#include "model/loader.h"
#include "backends/cpu/format_rounding.h"
#include "runtime/precision.h"
#include "support/model_builder.h"

using namespace mpa;

namespace {

// x -> Conv -> Relu -> MaxPool -> Transpose -> Reshape, plus Neg, Max, Abs, GlobalMaxPool, Concat,
// Slice and Where over the conv output: every kind of selection next to a node that computes.
Model selection_model() {
  mpa::test::ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 0.7f);
  std::vector<float> w(4 * 3 * 3 * 3);
  for (float& v : w) v = normal(rng);
  b.initializer("w", {4, 3, 3, 3}, w);
  b.int64_initializer("flat", {2}, {1, -1});
  b.int64_initializer("starts", {1}, {1});
  b.int64_initializer("ends", {1}, {3});
  b.int64_initializer("axes", {1}, {1});
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  b.node("Relu", {"c"}, {"r"}, "relu");
  auto& pool = b.node("MaxPool", {"r"}, {"p"}, "pool");
  mpa::test::ModelBuilder::set_ints(pool, "kernel_shape", {2, 2});
  mpa::test::ModelBuilder::set_ints(pool, "strides", {2, 2});
  auto& transpose = b.node("Transpose", {"p"}, {"t"}, "transpose");
  mpa::test::ModelBuilder::set_ints(transpose, "perm", {0, 2, 3, 1});
  b.node("Reshape", {"t", "flat"}, {"flat_out"}, "reshape");
  b.node("Neg", {"c"}, {"n"}, "neg");
  b.node("Max", {"c", "n"}, {"m"}, "max");
  b.node("Abs", {"n"}, {"a"}, "abs");
  b.node("GlobalMaxPool", {"a"}, {"g"}, "global_max");
  onnx::AttributeProto* axis = b.node("Concat", {"m", "a"}, {"cat"}, "concat").add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  b.node("Slice", {"cat", "starts", "ends", "axes"}, {"s"}, "slice");
  b.node("Greater", {"c", "n"}, {"positive"}, "greater");
  b.node("Where", {"positive", "c", "n"}, {"wh"}, "where");
  for (const char* out : {"flat_out", "g", "s", "wh"}) b.output(out);
  return load_model_from_bytes(b.bytes(), ".", "selection.onnx");
}

Tensor input_sample() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> x(3 * 8 * 8);
  for (float& v : x) v = normal(rng);
  return Tensor::from_vector<float>(x, {1, 3, 8, 8});
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

TEST(IsolatedShortcut, SelectionOpsOnStoredInputsGiveTheStoredReferenceOutput) {
  const Model model = selection_model();
  const Graph& graph = *model.graph;
  Session reference(model.graph);
  TensorMap values = {{"x", input_sample()}};
  for (const auto& [name, t] : graph.initializers) values[name] = t;
  reference.run({{"x", values.at("x")}}, [&](const Node& node, size_t, const std::vector<const Tensor*>& outputs) {
    for (size_t o = 0; o < outputs.size(); ++o)
      if (outputs[o]) values[node.outputs[o]] = *outputs[o];
  });
  int checked = 0;
  for (Format format : {Format::FP16, Format::BF16, Format::FP8E4M3FN, Format::FP8E5M2}) {
    SessionOptions options;
    options.precision = format;
    Session low(model.graph, options);
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node& node = graph.nodes[i];
      if (!traits_of(node).rounding_commutes) continue;
      std::vector<Tensor> stored_inputs;
      for (const auto& name : node.inputs) {
        const Tensor& v = values.at(name);
        stored_inputs.push_back(dtype_is_float(v.dtype()) ? cpu::tensor_in_format(v, format) : v);
      }
      std::vector<const Tensor*> pointers;
      for (const Tensor& t : stored_inputs) pointers.push_back(&t);
      std::vector<Tensor> isolated = low.rerun(i, pointers, low.default_config(), true);
      for (size_t o = 0; o < isolated.size(); ++o) {
        if (!isolated[o].defined() || !dtype_is_float(isolated[o].dtype())) continue;
        EXPECT_TRUE(same_bits(isolated[o], cpu::tensor_in_format(values.at(node.outputs[o]), format)))
            << node.label() << " in " << format_name(format);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 11);  // eleven selection nodes, four formats
}

// In the report, a selection node's isolated figures are its stored ones; a computing node's are not.
TEST(IsolatedShortcut, ReportCarriesTheStoredFiguresAsIsolated) {
  const Model model = selection_model();
  Auditor auditor(model.graph, AuditOptions{});
  auditor.observe({{"x", input_sample()}}, 0);
  report::Report rep;
  rep.config.targets = {"fp16"};
  auditor.fill(rep);
  for (const report::NodeStats& node : rep.nodes) {
    const report::TensorTarget& t = node.tensors.at(0).targets.at("fp16");
    if (node.name == "conv") {
      EXPECT_NE(t.isolated.max_abs, t.stored.max_abs);
    } else if (node.name != "greater") {
      EXPECT_EQ(t.isolated.max_abs, t.stored.max_abs) << node.name;
      EXPECT_EQ(t.isolated.compared, t.stored.compared) << node.name;
      EXPECT_GT(t.isolated.compared, 0) << node.name;
    }
  }
}

// Transpose and Reshape only move values: every figure of their outputs equals their input's, the
// MaxPool output (the audit reuses the input's figures instead of measuring the same values again).
TEST(IsolatedShortcut, ValueMovingNodesCarryTheirInputsFigures) {
  const Model model = selection_model();
  Auditor auditor(model.graph, AuditOptions{});
  auditor.observe({{"x", input_sample()}}, 0);
  auditor.observe({{"x", Tensor::from_vector<float>(std::vector<float>(3 * 8 * 8, 70000.f), {1, 3, 8, 8})}}, 1);
  report::Report rep;
  rep.config.targets = {"fp16"};
  auditor.fill(rep);
  auto tensor_of = [&](const std::string& name) -> const report::TensorStats& {
    for (const report::NodeStats& node : rep.nodes)
      if (node.name == name) return node.tensors.at(0);
    throw std::runtime_error("no node " + name);
  };
  const report::TensorStats& pooled = tensor_of("pool");
  for (const char* name : {"transpose", "reshape"}) {
    SCOPED_TRACE(name);
    const report::TensorStats& moved = tensor_of(name);
    EXPECT_EQ(moved.range.count, pooled.range.count);
    EXPECT_EQ(moved.range.min, pooled.range.min);
    EXPECT_EQ(moved.range.max, pooled.range.max);
    EXPECT_EQ(moved.range.zeros, pooled.range.zeros);
    EXPECT_EQ(moved.range.sum, pooled.range.sum);
    EXPECT_EQ(moved.hist.counts, pooled.hist.counts);
    const report::TensorTarget &m = moved.targets.at("fp16"), &p = pooled.targets.at("fp16");
    EXPECT_EQ(m.fit.overflow, p.fit.overflow);
    EXPECT_GT(m.fit.overflow, 0);  // the second sample overflows fp16
    for (auto [a, b] : {std::pair{&m.stored, &p.stored}, {&m.isolated, &p.stored}, {&m.propagated, &p.propagated}}) {
      EXPECT_EQ(a->compared, b->compared);
      EXPECT_EQ(a->inf, b->inf);
      EXPECT_EQ(a->max_abs, b->max_abs);
      EXPECT_EQ(a->sum_sq_err, b->sum_sq_err);
      EXPECT_EQ(a->worst_sample, b->worst_sample);
    }
    EXPECT_EQ(m.propagated_hist.counts, p.propagated_hist.counts);
  }
}
