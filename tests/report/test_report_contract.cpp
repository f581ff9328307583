// The JSON report as a contract (reports/schema/mpaudit.report.4.json): every report the real CLI writes
// validates against the schema; the same model, inputs and seed give the same bytes whatever the thread
// count; shards merged with `mpaudit merge` give the bytes of an audit of the whole set; read_report and
// write_report round-trip byte for byte; reports are written atomically; --fail-on keeps its exit codes.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "io/npy.h"
#include "reports/report.h"
#include "support/json_schema.h"
#include "support/model_builder.h"
#include "support/report_versions.h"
#include "support/run_cli.h"

using mpa::test::CliResult;
using mpa::test::ModelBuilder;
using mpa::test::read_whole_file;
using mpa::test::run_cli;
using mpa::test::SubgraphBuilder;
using mpa::test::TempDir;
using mpa::test::write_whole_file;
namespace fs = std::filesystem;

namespace {

// [SECTION] Schema

const mpa::test::JsonSchema& report_schema() {
  static const mpa::test::JsonSchema schema(MPA_SCHEMA_PATH);
  return schema;
}

// [SECTION] Models

std::vector<float> normal_values(size_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// Gemm -> Relu -> Gemm -> Softmax with small weights: well inside fp16, so nothing is unsafe.
ModelBuilder mlp_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 8});
  b.initializer("w1", {8, 16}, normal_values(8 * 16, 0.3f, 1));
  b.initializer("b1", {16}, normal_values(16, 0.1f, 2));
  b.initializer("w2", {16, 4}, normal_values(16 * 4, 0.3f, 3));
  b.initializer("b2", {4}, normal_values(4, 0.1f, 4));
  b.node("Gemm", {"x", "w1", "b1"}, {"h"}, "fc1");
  b.node("Relu", {"h"}, {"a"}, "act");
  b.node("Gemm", {"a", "w2", "b2"}, {"logits"}, "fc2");
  b.node("Softmax", {"logits"}, {"probs"}, "softmax");
  b.output("probs", onnx::TensorProto::FLOAT, {2, 4});
  return b;
}

// Integer values next to float ones: Shape's int64 output is reported by shape and type only, and is
// also a graph output the summary must leave out.
ModelBuilder shape_reshape_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  b.int64_initializer("flat_shape", {2}, {2, -1});
  b.node("Relu", {"x"}, {"r"}, "act");
  b.node("Shape", {"x"}, {"x_shape"}, "shape_of_x");
  b.node("Reshape", {"r", "flat_shape"}, {"flat"}, "flatten");
  b.node("Reshape", {"flat", "x_shape"}, {"y"}, "restore");
  b.output("y", onnx::TensorProto::FLOAT, {2, 3, 4});
  b.output("x_shape", onnx::TensorProto::INT64, {3});
  return b;
}

// Two float outputs declared in non-alphabetical order, so any re-sorting of outputs shows.
ModelBuilder two_output_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {3, 5});
  b.initializer("half", {1}, {0.5f});
  b.node("Tanh", {"x"}, {"z_tanh"}, "squash");
  b.node("Mul", {"x", "half"}, {"a_half"}, "halve");
  b.output("z_tanh", onnx::TensorProto::FLOAT, {3, 5});
  b.output("a_half", onnx::TensorProto::FLOAT, {3, 5});
  return b;
}

// An If whose then-branch holds a Loop: samples take either branch, so a node inside one may have run in
// one shard only; its entries in the report carry paths such as "branch/then/repeat/body/accumulate".
ModelBuilder branching_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.initializer("zero", {}, {0.f});
  b.initializer("gain", {}, {1.37f});
  b.int64_initializer("trips", {}, {3});
  b.node("ReduceSum", {"x"}, {"sum"}, "sum");
  b.node("Greater", {"sum", "zero"}, {"positive"}, "positive");
  SubgraphBuilder body("body"), then_branch("then"), else_branch("else");
  body.input("iter", onnx::TensorProto::INT64, {});
  body.input("cond_in", onnx::TensorProto::BOOL, {});
  body.input("acc_in", onnx::TensorProto::FLOAT, {4});
  body.node("Mul", {"acc_in", "gain"}, {"acc_out"}, "accumulate");
  body.node("Identity", {"cond_in"}, {"cond_out"}, "again");
  body.output("cond_out", onnx::TensorProto::BOOL);
  body.output("acc_out", onnx::TensorProto::FLOAT, {4});
  ModelBuilder::set_graph(then_branch.node("Loop", {"trips", "", "x"}, {"grown"}, "repeat"), "body", body.graph());
  then_branch.output("grown", onnx::TensorProto::FLOAT, {4});
  else_branch.node("Tanh", {"x"}, {"squashed"}, "squash");
  else_branch.output("squashed", onnx::TensorProto::FLOAT, {4});
  onnx::NodeProto& branch = b.node("If", {"positive"}, {"y"}, "branch");
  ModelBuilder::set_graph(branch, "then_branch", then_branch.graph());
  ModelBuilder::set_graph(branch, "else_branch", else_branch.graph());
  b.output("y", onnx::TensorProto::FLOAT, {4});
  return b;
}

// Inputs ~N(0,1) times 1e5 exceed fp16's 65504 (and so does the weight): node "scale" must be unsafe, and
// its fp16 run turns Inf, which exercises the null figures of the report.
ModelBuilder planted_overflow_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4, 8});
  b.initializer("gain", {1}, {1e5f});
  b.node("Mul", {"x", "gain"}, {"y"}, "scale");
  b.output("y", onnx::TensorProto::FLOAT, {4, 8});
  return b;
}

// Outputs larger than one probe chunk (16384 values), so a second thread has work of its own: elementwise
// ops and a row-wise Softmax.
ModelBuilder wide_elementwise_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 96, 128});
  b.initializer("gain", {128}, normal_values(128, 2.f, 5));
  b.node("Mul", {"x", "gain"}, {"scaled"}, "scale");
  b.node("Relu", {"scaled"}, {"positive"}, "act");
  b.node("Softmax", {"positive"}, {"y"}, "softmax");
  b.output("y", onnx::TensorProto::FLOAT, {2, 96, 128});
  return b;
}

// The same size through MatMul, whose CPU GEMM is split across threads.
ModelBuilder wide_matmul_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 96, 128});
  b.initializer("w", {128, 160}, normal_values(128 * 160, 0.1f, 5));
  b.node("MatMul", {"x", "w"}, {"proj"}, "project");
  b.node("Relu", {"proj"}, {"y"}, "act");
  b.output("y", onnx::TensorProto::FLOAT, {2, 96, 160});
  return b;
}

// A batch dimension left open ("N"), so that samples of different batch sizes audit one model.
ModelBuilder dynamic_batch_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {-1, 4});
  b.node("Tanh", {"x"}, {"y"}, "squash");
  b.output("y", onnx::TensorProto::FLOAT, {-1, 4});
  return b;
}

// [SECTION] Fixture

// The contract of every CLI failure: exit 2 and exactly one line on stderr, naming what went wrong.
void expect_one_line_error(const CliResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("mpaudit: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << "missing '" << fragment << "' in: " << r.err;
}

class ReportContract : public ::testing::Test {
 protected:
  fs::path save(const ModelBuilder& model, const std::string& name) {
    const fs::path path = dir_ / name;
    model.save(path);
    return path;
  }
  fs::path path(const std::string& name) const { return dir_ / name; }

  // `mpaudit audit MODEL --quiet --json REPORT ARGS`; the report is written whatever the gates say
  // (exit 0 or 1). Returns the report's bytes.
  std::string audit(const fs::path& model, const std::string& report_name, const std::string& args) {
    const CliResult r = cli("audit " + model.string() + " --quiet --json " + path(report_name).string() + " " + args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << "exit " << r.exit_code << ": " << r.err;
    EXPECT_TRUE(fs::is_regular_file(path(report_name))) << report_name << " was not written: " << r.err;
    return read_whole_file(path(report_name));
  }
  CliResult merge(const std::vector<std::string>& report_names, const std::string& output_name) {
    std::string args = "merge --quiet -o " + path(output_name).string();
    for (const std::string& name : report_names) args.append(" ").append(path(name).string());
    return cli(args);
  }
  CliResult cli(const std::string& args) { return run_cli(dir_, args); }

 private:
  TempDir dir_;
};

void expect_valid(const std::string& report_text, const std::string& what) {
  SCOPED_TRACE(what);
  const nlohmann::json report = nlohmann::json::parse(report_text);
  EXPECT_EQ(report_schema().violations(report), "");
}

// [SECTION] a. Schema validation

TEST_F(ReportContract, ReportsOfSmallModelsValidate) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  expect_valid(audit(mlp, "mlp.json", "--samples 2"), "mlp, fp16");
  expect_valid(audit(save(shape_reshape_model(), "shape.onnx"), "shape.json", "--samples 2"),
               "integer Shape/Reshape path");
  expect_valid(audit(save(two_output_model(), "two.onnx"), "two.json", "--samples 2"), "two outputs");
  expect_valid(audit(mlp, "all_targets.json",
                     "--samples 2 --target fp16 --target bf16 --target fp8e4m3 --target fp8e5m2 --target tf32"),
               "every target format");
  expect_valid(audit(mlp, "fp64.json", "--samples 2 --reference fp64 --target bf16"), "fp64 reference");
  expect_valid(audit(mlp, "timing.json", "--samples 2 --timing"), "with --timing");
  expect_valid(audit(save(planted_overflow_model(), "overflow.onnx"), "overflow.json", "--samples 2"),
               "planted overflow: Inf in the target run, null figures");
  expect_valid(audit(mlp, "shard.json", "--samples 3 --shard 1/3"), "one shard");
  const nlohmann::json branching =
      nlohmann::json::parse(audit(save(branching_model(), "branching.onnx"), "branching.json", "--samples 4"));
  EXPECT_EQ(report_schema().violations(branching), "") << "If with a Loop inside";
  std::vector<std::string> names;
  for (const auto& node : branching["nodes"]) names.push_back(node["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"sum", "positive", "branch/then/repeat/body/accumulate",
                                             "branch/then/repeat/body/again", "branch/then/repeat",
                                             "branch/else/squash", "branch"}));
  EXPECT_EQ(branching["nodes"][2]["scope"], "branch/then/repeat/body");
  EXPECT_TRUE(branching["nodes"][6]["scope"].is_null());
  // The Loop body's float carried value arrives widened to double under an fp64 reference.
  expect_valid(audit(path("branching.onnx"), "branching_fp64.json", "--samples 4 --reference fp64"),
               "If with a Loop inside, fp64 reference");
  expect_valid(
      audit(fs::path(MPA_SOURCE_DIR) / "models/demo/tiny_cnn.onnx", "tiny_cnn.json", "--samples 1 --target bf16"),
      "demo CNN");
  // Traced consequences (absorbed, NaN reaching the output) and advice verified by a second audit.
  const fs::path demo = fs::path(MPA_SOURCE_DIR) / "models/demo";
  const nlohmann::json attention = nlohmann::json::parse(
      audit(demo / "tiny_attention.onnx", "tiny_attention.json",
            "--input hidden=" + (demo / "attention_hidden.npy").string() + " --input attention_mask=" +
                (demo / "attention_mask.npy").string()));
  EXPECT_EQ(report_schema().violations(attention), "") << "demo attention block";
  EXPECT_EQ(attention["summary"]["targets"]["fp16"]["advice"]["verified"], true);
  EXPECT_EQ(attention["summary"]["targets"]["fp16"]["advice"]["rounds"], 1);
}

// Reports of schema 1 (before traced consequences and verified advice) are still read, as reports with
// no traces whose advice is not verified.
TEST_F(ReportContract, SchemaOneReportsAreRead) {
  nlohmann::json report = nlohmann::json::parse(audit(save(planted_overflow_model(), "overflow.onnx"), "v2.json", "--samples 2"));
  mpa::test::as_schema_one(report);
  std::ofstream(path("v1.json")) << report.dump();
  const mpa::report::Report read = mpa::report::read_report(path("v1.json").string());
  EXPECT_FALSE(read.summary.at("fp16").advice.verified);
  for (const auto& node : read.nodes) EXPECT_TRUE(node.targets.at("fp16").consequence.empty()) << node.name;
}

// Reports of schema 2 (before placement) are read as reports whose every node ran on the CPU, and merge
// with today's.
TEST_F(ReportContract, SchemaTwoReportsAreReadAsRunOnTheCpu) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  nlohmann::json old = nlohmann::json::parse(audit(mlp, "part1.json", "--samples 2 --shard 1/2"));
  mpa::test::as_schema_two(old);
  std::ofstream(path("v2.json")) << old.dump();
  const mpa::report::Report read = mpa::report::read_report(path("v2.json").string());
  EXPECT_EQ(read.config.backend, "cpu");
  for (const auto& node : read.nodes) EXPECT_TRUE(node.fallbacks.empty()) << node.name;
  audit(mlp, "part2.json", "--samples 2 --shard 2/2");
  ASSERT_EQ(merge({"v2.json", "part2.json"}, "whole.json").exit_code, 0);
  expect_valid(read_whole_file(path("whole.json")), "merge of a schema-2 shard with a schema-4 one");
}

// Reports of schema 3 (before --isolated) are read as audits that ran every node alone, and merge with
// today's; reports of different --isolated settings do not merge (their isolated figures differ).
TEST_F(ReportContract, SchemaThreeReportsAreReadAsIsolatedAll) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  nlohmann::json old = nlohmann::json::parse(audit(mlp, "part1.json", "--samples 2 --shard 1/2"));
  mpa::test::as_schema_three(old);
  std::ofstream(path("v3.json")) << old.dump();
  EXPECT_EQ(mpa::report::read_report(path("v3.json").string()).config.isolated, "all");
  audit(mlp, "part2.json", "--samples 2 --shard 2/2");
  ASSERT_EQ(merge({"v3.json", "part2.json"}, "whole.json").exit_code, 0);
  expect_valid(read_whole_file(path("whole.json")), "merge of a schema-3 shard with a schema-4 one");
  audit(mlp, "suspects.json", "--samples 2 --shard 2/2 --isolated suspects");
  const auto refused = merge({"part1.json", "suspects.json"}, "mixed.json");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("config.isolated"), std::string::npos) << refused.err;
}

// Under --isolated off no node runs alone: every node target that reads floats says how many executions
// skipped it, the report validates, and a merge of shards sums the counts.
TEST_F(ReportContract, SkippedIsolatedRunsAreCountedPerNode) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  for (const char* shard : {"1/2", "2/2"})
    audit(mlp, std::string("off") + shard[0] + ".json", std::string("--samples 4 --isolated off --shard ") + shard);
  ASSERT_EQ(merge({"off1.json", "off2.json"}, "off.json").exit_code, 0);
  const std::string whole = read_whole_file(path("off.json"));
  expect_valid(whole, "a report of --isolated off");
  const nlohmann::json report = nlohmann::json::parse(whole);
  EXPECT_EQ(report["config"]["isolated"], "off");
  int64_t counted = 0;
  for (const auto& node : report["nodes"])
    if (node["targets"]["fp16"].contains("isolated_skipped")) {
      EXPECT_EQ(node["targets"]["fp16"]["isolated_skipped"], node["executions"]) << node["name"];
      ++counted;
    }
  EXPECT_GT(counted, 0);
}

TEST_F(ReportContract, MergedReportsValidate) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  for (const char* shard : {"1/3", "2/3", "3/3"})
    audit(mlp, std::string("part") + shard[0] + ".json", std::string("--samples 3 --shard ") + shard);
  ASSERT_EQ(merge({"part1.json", "part2.json"}, "partial.json").exit_code, 0);
  expect_valid(read_whole_file(path("partial.json")), "merge of 2 of 3 shards");
  EXPECT_EQ(nlohmann::json::parse(read_whole_file(path("partial.json")))["config"]["shard"], "partial");
  ASSERT_EQ(merge({"partial.json", "part3.json"}, "whole.json").exit_code, 0);
  expect_valid(read_whole_file(path("whole.json")), "merge of all shards");
}

// Issue 19, merge you can trust: a shard whose counters are corrupt (2^64 - 1, which wrapped before,
// negative, fractional, beyond 2^53) is refused in one line naming the file and the field, and nothing is
// written; the other shard's report is untouched.
TEST_F(ReportContract, MergeRefusesCorruptCountersNamingTheFileAndField) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  for (const char* shard : {"1/2", "2/2"})
    audit(mlp, std::string("part") + shard[0] + ".json", std::string("--samples 2 --shard ") + shard);
  const nlohmann::json good = nlohmann::json::parse(read_whole_file(path("part2.json")));
  const std::vector<std::pair<std::string, nlohmann::json>> damage = {
      {"wrapped", nlohmann::json(std::numeric_limits<uint64_t>::max())},
      {"negative", nlohmann::json(-3)},
      {"fractional", nlohmann::json(2.5)},
      {"beyond_2_53", nlohmann::json(int64_t{1} << 54)}};
  for (const auto& [name, value] : damage) {
    SCOPED_TRACE(name);
    nlohmann::json bad = good;
    bad["nodes"][0]["tensors"][0]["reference"]["count"] = value;
    write_whole_file(path(name + ".json"), bad.dump());
    const CliResult r = merge({"part1.json", name + ".json"}, "merged.json");
    expect_one_line_error(r,
                          name + ".json: not a valid mpaudit report: <root>[nodes][0][tensors][0][reference][count]");
    EXPECT_FALSE(fs::exists(path("merged.json")));
  }
  EXPECT_EQ(merge({"part1.json", "part2.json"}, "merged.json").exit_code, 0);
}

// The schema is not vacuous: each kind of damage is caught.
TEST_F(ReportContract, BrokenReportsFailValidation) {
  const nlohmann::json good = nlohmann::json::parse(audit(save(mlp_model(), "mlp.onnx"), "mlp.json", "--samples 1"));
  ASSERT_EQ(report_schema().violations(good), "");
  auto expect_invalid = [&good](const std::string& what, const std::function<void(nlohmann::json&)>& damage) {
    nlohmann::json broken = good;
    damage(broken);
    EXPECT_NE(report_schema().violations(broken), "") << what << " was accepted";
  };
  auto first_tensor = [](nlohmann::json& r) -> nlohmann::json& { return r["nodes"][0]["tensors"][0]; };
  expect_invalid("a missing required key", [](nlohmann::json& r) { r["model"].erase("sha256"); });
  expect_invalid("a missing node field", [](nlohmann::json& r) { r["nodes"][0].erase("targets"); });
  expect_invalid("an unknown verdict",
                 [](nlohmann::json& r) { r["nodes"][0]["targets"]["fp16"]["verdict"] = "dangerous"; });
  expect_invalid("an unknown summary verdict",
                 [](nlohmann::json& r) { r["summary"]["targets"]["fp16"]["verdict"] = "safe"; });
  expect_invalid("an unknown reason code", [](nlohmann::json& r) {
    r["nodes"][0]["targets"]["fp16"]["reasons"].push_back({{"code", "overflowed"}, {"level", "warn"}, {"message", ""}});
  });
  expect_invalid("an 85-bin histogram", [&](nlohmann::json& r) { first_tensor(r)["reference"]["exp_hist"].erase(0); });
  expect_invalid("a negative histogram count",
                 [&](nlohmann::json& r) { first_tensor(r)["reference"]["exp_hist"][3] = -1; });
  expect_invalid("another schema version", [](nlohmann::json& r) { r["schema"] = "mpaudit.report/5"; });
  expect_invalid("a node verdict without its consequence field",
                 [](nlohmann::json& r) { r["nodes"][0]["targets"]["fp16"].erase("consequence"); });
  expect_invalid("a summary without its advice", [](nlohmann::json& r) { r["summary"]["targets"]["fp16"].erase("advice"); });
  expect_invalid("an unknown top-level key", [](nlohmann::json& r) { r["extra"] = 1; });
  expect_invalid("a report without its placement", [](nlohmann::json& r) { r.erase("placement"); });
  expect_invalid("a negative byte count", [](nlohmann::json& r) { r["placement"]["bytes_uploaded"] = -1; });
  expect_invalid("an empty fallbacks object", [](nlohmann::json& r) { r["nodes"][0]["fallbacks"] = nlohmann::json::object(); });
  expect_invalid("an unknown target format",
                 [](nlohmann::json& r) { r["summary"]["targets"]["fp12"] = r["summary"]["targets"]["fp16"]; });
  expect_invalid("a string where a metric belongs",
                 [&](nlohmann::json& r) { first_tensor(r)["targets"]["fp16"]["isolated"]["sqnr_db"] = "high"; });
  expect_invalid("an SQNR above the 400 dB cap",
                 [&](nlohmann::json& r) { first_tensor(r)["targets"]["fp16"]["isolated"]["sqnr_db"] = 401; });
}

// [SECTION] b. Determinism

TEST_F(ReportContract, SameInputsGiveTheSameBytes) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  const std::string first = audit(mlp, "first.json", "--samples 3 --seed 11 --target fp16 --target bf16");
  const std::string second = audit(mlp, "second.json", "--samples 3 --seed 11 --target fp16 --target bf16");
  EXPECT_TRUE(first == second) << "two runs of the same audit differ";
  EXPECT_NE(first, audit(mlp, "other_seed.json", "--samples 3 --seed 12 --target fp16 --target bf16"))
      << "the seed does not reach the inputs";
}

TEST_F(ReportContract, ThreadCountDoesNotChangeTheBytes) {
  const fs::path wide = save(wide_elementwise_model(), "wide.onnx");
  const std::string one = audit(wide, "one.json", "--samples 2 --threads 1 --target fp16 --target bf16");
  const std::string two = audit(wide, "two.json", "--samples 2 --threads 2 --target fp16 --target bf16");
  EXPECT_TRUE(one == two) << "--threads 1 and --threads 2 reports differ";
}

// GEMM blocks depend on the shape only (split_gemm), so the BLAS sums every element in the same order
// whatever the thread count.
TEST_F(ReportContract, ThreadCountDoesNotChangeMatMulReports) {
  const fs::path wide = save(wide_matmul_model(), "wide.onnx");
  const std::string one = audit(wide, "one.json", "--samples 2 --threads 1 --target fp16");
  const std::string two = audit(wide, "two.json", "--samples 2 --threads 2 --target fp16");
  EXPECT_TRUE(one == two) << "--threads 1 and --threads 2 reports differ";
}

// [SECTION] c. Merge

TEST_F(ReportContract, TwoShardsMergeToTheWholeSet) {
  for (const auto& [model, name] : {std::pair{mlp_model(), "mlp"}, std::pair{two_output_model(), "two"},
                                    std::pair{branching_model(), "branching"}}) {
    SCOPED_TRACE(name);
    const fs::path onnx = save(model, std::string(name) + ".onnx");
    const std::string settings = "--samples 6 --seed 6 --target fp16 --target bf16";
    const std::string whole = audit(onnx, "whole.json", settings);
    audit(onnx, "half1.json", settings + " --shard 1/2");
    audit(onnx, "half2.json", settings + " --shard 2/2");
    const CliResult r = merge({"half1.json", "half2.json"}, "merged.json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(read_whole_file(path("merged.json")) == whole) << "merged shards differ from the whole set";
    if (std::string(name) != "branching") continue;
    // The seed is chosen so that a branch runs in one shard only: the merge meets a node without figures.
    int unrun = 0;
    for (const char* half : {"half1.json", "half2.json"}) {
      const nlohmann::json report = nlohmann::json::parse(read_whole_file(path(half)));
      for (const auto& node : report["nodes"]) unrun += node["executions"] == 0;
    }
    EXPECT_GT(unrun, 0);
  }
}

TEST_F(ReportContract, ThreeShardsMergeInAnyOrder) {
  const fs::path onnx = save(two_output_model(), "two.onnx");
  const std::string settings = "--samples 6 --seed 9";
  const std::string whole = audit(onnx, "whole.json", settings);
  for (const char* shard : {"1/3", "2/3", "3/3"})
    audit(onnx, std::string("third") + shard[0] + ".json", settings + " --shard " + shard);
  ASSERT_EQ(merge({"third3.json", "third1.json", "third2.json"}, "merged.json").exit_code, 0);
  EXPECT_TRUE(read_whole_file(path("merged.json")) == whole) << "3-way merge (3, 1, 2) differs from the whole set";
}

// Fewer samples than shards: shard 1/3 holds none, and listed first it must not drop the output summary.
TEST_F(ReportContract, AnEmptyShardMergesLikeTheOthers) {
  const fs::path onnx = save(two_output_model(), "two.onnx");
  const std::string whole = audit(onnx, "whole.json", "--samples 2 --seed 3");
  for (const char* shard : {"1/3", "2/3", "3/3"})
    audit(onnx, std::string("third") + shard[0] + ".json", std::string("--samples 2 --seed 3 --shard ") + shard);
  EXPECT_EQ(nlohmann::json::parse(read_whole_file(path("third1.json")))["config"]["samples"], 0);
  ASSERT_EQ(merge({"third1.json", "third2.json", "third3.json"}, "merged.json").exit_code, 0);
  EXPECT_TRUE(read_whole_file(path("merged.json")) == whole) << "merge led by the empty shard differs";
}

// Samples of batch 1, 3 and 2: dimensions that differ between samples are -1 whatever the merge order.
TEST_F(ReportContract, ShapesThatVaryBetweenSamplesMergeInAnyOrder) {
  const fs::path onnx = save(dynamic_batch_model(), "dynamic.onnx");
  const int64_t batches[] = {1, 3, 2};
  for (int s = 0; s < 3; ++s) {
    const fs::path folder = path("samples") / ("s" + std::to_string(s));
    fs::create_directories(folder);
    mpa::write_npy(folder / "x.npy",
                   mpa::Tensor::from_vector<float>(normal_values(static_cast<size_t>(batches[s]) * 4, 1.f, 7 + s),
                                                   {batches[s], 4}));
  }
  const std::string inputs = "--inputs " + path("samples").string();
  const std::string whole = audit(onnx, "whole.json", inputs);
  EXPECT_EQ(nlohmann::json::parse(whole)["nodes"][0]["tensors"][0]["shape"], nlohmann::json::array({-1, 4}));
  expect_valid(whole, "a shape that varies between samples");
  for (const char* shard : {"1/3", "2/3", "3/3"})
    audit(onnx, std::string("third") + shard[0] + ".json", inputs + " --shard " + shard);
  EXPECT_EQ(nlohmann::json::parse(read_whole_file(path("third2.json")))["nodes"][0]["tensors"][0]["shape"],
            nlohmann::json::array({3, 4}));
  for (const std::vector<std::string>& order :
       {std::vector<std::string>{"third2.json", "third1.json", "third3.json"},
        std::vector<std::string>{"third3.json", "third2.json", "third1.json"}}) {
    ASSERT_EQ(merge(order, "merged.json").exit_code, 0);
    EXPECT_TRUE(read_whole_file(path("merged.json")) == whole) << "merge from " << order[0] << " differs";
  }
}

// Each report records the samples it holds: a shard given twice cannot pass for the whole set.
TEST_F(ReportContract, AShardGivenTwiceIsRefused) {
  const fs::path onnx = save(mlp_model(), "mlp.onnx");
  for (const char* shard : {"1/3", "2/3", "3/3"})
    audit(onnx, std::string("third") + shard[0] + ".json", std::string("--samples 7 --shard ") + shard);
  EXPECT_EQ(nlohmann::json::parse(read_whole_file(path("third2.json")))["config"]["sample_ranges"],
            nlohmann::json::parse("[[2, 4]]"));
  expect_one_line_error(merge({"third1.json", "third1.json", "third3.json"}, "out.json"), "more than one report");
  ASSERT_EQ(merge({"third3.json", "third1.json"}, "partial.json").exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(read_whole_file(path("partial.json")))["config"]["sample_ranges"],
            nlohmann::json::parse("[[0, 2], [4, 7]]"));
  expect_one_line_error(merge({"partial.json", "third3.json"}, "out.json"), "samples 4..6");
  EXPECT_FALSE(fs::exists(path("out.json")));
  // A shard that holds the whole set is the whole set.
  EXPECT_TRUE(audit(onnx, "one_of_one.json", "--samples 2 --shard 1/1") == audit(onnx, "all.json", "--samples 2"));
}

TEST_F(ReportContract, MergingDifferentModelsOrSettingsFails) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx"), two = save(two_output_model(), "two.onnx");
  audit(mlp, "mlp1.json", "--samples 2 --shard 1/2");
  audit(two, "two2.json", "--samples 2 --shard 2/2");
  audit(mlp, "mlp2_bf16.json", "--samples 2 --shard 2/2 --target bf16");
  audit(mlp, "mlp2_seed.json", "--samples 2 --shard 2/2 --seed 4");
  audit(mlp, "mlp_whole.json", "--samples 2");
  expect_one_line_error(merge({"mlp1.json", "two2.json"}, "out.json"), "different models");
  expect_one_line_error(merge({"mlp1.json", "mlp2_bf16.json"}, "out.json"), "config.targets");
  audit(mlp, "mlp2_fp16acc.json", "--samples 2 --shard 2/2 --accumulate fp16");
  audit(mlp, "mlp2_of3.json", "--samples 3 --shard 2/2");
  expect_one_line_error(merge({"mlp1.json", "mlp2_fp16acc.json"}, "out.json"), "config.accumulation");
  expect_one_line_error(merge({"mlp1.json", "mlp2_of3.json"}, "out.json"), "config.total_samples of the inputs");
  expect_one_line_error(merge({"mlp_whole.json", "mlp1.json"}, "out.json"), "more than one report");
  EXPECT_FALSE(fs::exists(path("out.json")));
  // Another seed is another input source, not another setting.
  ASSERT_EQ(merge({"mlp1.json", "mlp2_seed.json"}, "seeds.json").exit_code, 0);
  const nlohmann::json seeds = nlohmann::json::parse(read_whole_file(path("seeds.json")))["config"];
  EXPECT_EQ(seeds["input_sources"].size(), 2u);
  EXPECT_EQ(seeds["shard"], "partial");
}

// Issue 19: sharded CI audits the same model on different input folders; the merge joins them and lists
// every source with its samples (before, it refused them: "config.inputs differs").
TEST_F(ReportContract, ReportsOfDifferentInputFoldersMergeListingEverySource) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  for (const auto& [folder, count] : {std::pair{"day1", 3}, {"day2", 2}})
    for (int i = 0; i < count; ++i) {
      fs::create_directories(path(folder) / std::to_string(i));
      mpa::Tensor x(mpa::DType::Float32, {2, 8});
      for (int k = 0; k < 16; ++k) x.data<float>()[k] = 0.25f * static_cast<float>(k - 3 * i) + (folder[3] == '2');
      mpa::write_npy(path(folder) / std::to_string(i) / "x.npy", x);
    }
  const std::string day1 = "--inputs " + path("day1").string(), day2 = "--inputs " + path("day2").string();
  audit(mlp, "day1_a.json", day1 + " --shard 1/2");
  audit(mlp, "day1_b.json", day1 + " --shard 2/2");
  audit(mlp, "day2.json", day2);
  ASSERT_EQ(merge({"day1_a.json", "day2.json", "day1_b.json"}, "both.json").exit_code, 0);
  ASSERT_EQ(merge({"day2.json", "day1_b.json", "day1_a.json"}, "both_reordered.json").exit_code, 0);
  const std::string both = read_whole_file(path("both.json"));
  EXPECT_EQ(both, read_whole_file(path("both_reordered.json")));  // the order of the reports does not matter
  expect_valid(both, "a merge of two input folders");
  const nlohmann::json config = nlohmann::json::parse(both)["config"];
  EXPECT_EQ(config["inputs"], "2 input sources (config.input_sources)");
  EXPECT_EQ(config["samples"], 5);
  EXPECT_EQ(config["total_samples"], 5);
  EXPECT_TRUE(config["shard"].is_null());
  EXPECT_EQ(config["sample_ranges"], nlohmann::json::parse("[[0, 5]]"));
  ASSERT_EQ(config["input_sources"].size(), 2u);
  EXPECT_EQ(config["input_sources"][0]["inputs"], "samples from " + path("day1").string());
  EXPECT_EQ(config["input_sources"][0]["sample_ranges"], nlohmann::json::parse("[[0, 3]]"));
  EXPECT_EQ(config["input_sources"][1]["inputs"], "samples from " + path("day2").string());
  EXPECT_EQ(config["input_sources"][1]["samples"], 2);
  EXPECT_EQ(mpa::report::read_report(path("both.json").string()).config.inputs_text(),
            "samples from " + path("day1").string() + " (3 of 3); samples from " + path("day2").string() + " (2 of 2)");
  // A merged report merges again, each sample still counted once.
  expect_one_line_error(merge({"both.json", "day2.json"}, "out.json"), "more than one report");
  ASSERT_EQ(merge({"day1_a.json", "day2.json"}, "partial.json").exit_code, 0);
  ASSERT_EQ(merge({"partial.json", "day1_b.json"}, "again.json").exit_code, 0);
  EXPECT_EQ(read_whole_file(path("again.json")), both);
  // Every figure sums over both folders: the node counts are those of five samples.
  const nlohmann::json nodes = nlohmann::json::parse(both)["nodes"];
  const nlohmann::json one = nlohmann::json::parse(read_whole_file(path("day2.json")))["nodes"];
  EXPECT_EQ(nodes[0]["executions"].get<int64_t>(), one[0]["executions"].get<int64_t>() * 5 / 2);
}

// Damaged reports given to merge: one-line errors naming the file, never a crash or an internal error.
TEST_F(ReportContract, DamagedReportsFailToMergeWithTheirName) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  audit(mlp, "a.json", "--samples 2 --shard 1/2");
  const nlohmann::json b = nlohmann::json::parse(audit(mlp, "b.json", "--samples 2 --shard 2/2"));
  const std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> damages = {
      {"no 'fp16' entry", [](nlohmann::json& r) { r["nodes"][0]["tensors"][0]["targets"].erase("fp16"); }},
      {"no 'fp16' entry", [](nlohmann::json& r) { r["nodes"][0]["weights"][0]["targets"].erase("fp16"); }},
      {"out of range",
       [](nlohmann::json& r) {
         r["nodes"][0]["tensors"][0]["targets"]["fp16"]["propagated"]["state"]["sum_abs"] = "1111111111111111p2147482432";
       }},
  };
  for (const auto& [fragment, damage] : damages) {
    SCOPED_TRACE(fragment);
    nlohmann::json broken = b;
    damage(broken);
    write_whole_file(path("broken.json"), broken.dump());
    expect_one_line_error(merge({"a.json", "broken.json"}, "out.json"), "broken.json");
    expect_one_line_error(merge({"a.json", "broken.json"}, "out.json"), fragment);
  }
}

// [SECTION] d. Reader round trip

TEST_F(ReportContract, ReadThenWriteGivesTheSameBytes) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {mlp, "--samples 2 --target fp16 --target bf16 --target fp8e4m3 --target fp8e5m2 --target tf32"},
      {mlp, "--samples 2 --reference fp64 --timing"},
      {save(shape_reshape_model(), "shape.onnx"), "--samples 2 --shard 1/2"},
      {save(planted_overflow_model(), "overflow.onnx"), "--samples 2"},
  };
  for (const auto& [model, args] : cases) {
    SCOPED_TRACE(model.filename().string() + " " + args);
    const std::string original = audit(model, "original.json", args);
    mpa::report::write_report(path("rewritten.json").string(),
                              mpa::report::read_report(path("original.json").string()));
    EXPECT_TRUE(read_whole_file(path("rewritten.json")) == original) << "read_report/write_report changed the report";
  }
}

// [SECTION] e. Atomic write

TEST_F(ReportContract, WriteIntoAMissingFolderFailsAndLeavesNothing) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  const fs::path target = path("missing") / "report.json";
  expect_one_line_error(cli("audit " + mlp.string() + " --quiet --json " + target.string()), "report.json");
  EXPECT_FALSE(fs::exists(path("missing")));
  audit(mlp, "a.json", "--samples 2 --shard 1/2");
  audit(mlp, "b.json", "--samples 2 --shard 2/2");
  expect_one_line_error(merge({"a.json", "b.json"}, "missing/merged.json"), "merged.json");
  EXPECT_FALSE(fs::exists(path("missing")));
}

TEST_F(ReportContract, AnExistingReportIsReplacedWhole) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  const std::string fresh = audit(mlp, "fresh.json", "--samples 2");
  // Longer than the report: an in-place overwrite without truncation would leave its tail behind.
  write_whole_file(path("existing.json"), std::string(fresh.size() * 3, 'x'));
  EXPECT_TRUE(audit(mlp, "existing.json", "--samples 2") == fresh);
  for (const auto& entry : fs::directory_iterator(path(".")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();
}

// The temporary file's name is fresh: a link planted where a predictable name would be is neither followed
// nor replaced, and the file it points to keeps its bytes.
TEST_F(ReportContract, APlantedLinkIsNotFollowed) {
  write_whole_file(path("victim.txt"), "keep");
  const fs::path planted = path("report.json.tmp." + std::to_string(::getpid()));
  fs::create_symlink(path("victim.txt"), planted);
  mpa::write_file_atomic(path("report.json"), "{}\n");
  EXPECT_EQ(read_whole_file(path("victim.txt")), "keep");
  EXPECT_TRUE(fs::is_symlink(planted));
  EXPECT_EQ(read_whole_file(path("report.json")), "{}\n");
}

// A rename that fails says why (not the errno of the clean-up after it), and leaves no temporary file.
TEST_F(ReportContract, AFailedReplaceSaysWhyAndLeavesNothing) {
  fs::create_directories(path("taken") / "inside");
  try {
    mpa::write_file_atomic(path("taken"), "{}\n");
    FAIL() << "a folder was replaced";
  } catch (const mpa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot replace file: Is a directory"), std::string::npos) << e.what();
  }
  for (const auto& entry : fs::directory_iterator(path(".")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();
}

// A signal that ends the process while a report is written (here SIGXFSZ, from a file size limit; SIGINT,
// SIGTERM and SIGHUP take the same path) removes the temporary file first.
TEST_F(ReportContract, ASignalWhileWritingLeavesNoTemporaryFile) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit no_core{0, 0}, small{4096, 4096};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::setrlimit(RLIMIT_FSIZE, &small);
    mpa::write_file_atomic(path("big.json"), std::string(1 << 20, 'x'));
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the write was not interrupted, or the signal ended it uncaught";
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGXFSZ);
  EXPECT_FALSE(fs::exists(path("big.json")));
  for (const auto& entry : fs::directory_iterator(path(".")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();
}

// SIGINT or SIGTERM during an audit ends it with one line and 130 / 143, and no report or temporary file.
TEST_F(ReportContract, AnInterruptedAuditExitsWithOneLineAndLeavesNothing) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  for (const auto& [signal_name, code] : std::vector<std::pair<std::string, int>>{{"INT", 130}, {"TERM", 143}}) {
    const std::string cmd = "timeout --preserve-status -s " + signal_name + " 1 " + std::string(MPA_CLI_PATH) +
                            " audit " + mlp.string() + " --samples 100000000 --quiet --json " +
                            path("long.json").string() + " 2>" + path("err.txt").string();
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), code) << signal_name;
    const std::string err = read_whole_file(path("err.txt"));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("nothing half-written is left"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(path("long.json")));
  }
  for (const auto& entry : fs::directory_iterator(path(".")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();
}

// [SECTION] f. Exit codes of gates

TEST_F(ReportContract, GateExitCodes) {
  const fs::path safe = save(mlp_model(), "mlp.onnx"), overflow = save(planted_overflow_model(), "overflow.onnx");
  const std::string unsafe_gate = " --samples 2 --quiet --fail-on 'unsafe_nodes>0'";
  EXPECT_EQ(cli("audit " + safe.string() + unsafe_gate).exit_code, 0);

  const CliResult flagged =
      cli("audit " + overflow.string() + unsafe_gate + " --json " + path("overflow.json").string());
  EXPECT_EQ(flagged.exit_code, 1) << flagged.err;
  const mpa::report::Report report = mpa::report::read_report(path("overflow.json").string());
  EXPECT_EQ(report.summary.at("fp16").unsafe_nodes, std::vector<std::string>{"scale"});
  bool overflow_reason = false;
  for (const auto& node : report.nodes)
    for (const auto& reason : node.targets.at("fp16").reasons)
      overflow_reason |= node.name == "scale" && reason.code == "overflow";
  EXPECT_TRUE(overflow_reason) << "the planted overflow is not named as such";

  EXPECT_EQ(cli("audit " + safe.string() + " --samples 2 --quiet --fail-on 'output.max_rel_err>1e9'").exit_code, 0);
  for (const char* malformed : {"unsafe_nodes>>0", "unsafe_nodes>1e", "unsafe_nodes>1.2.3", "bogus>0", "unsafe_nodes",
                                "output.bogus>1", "bf16.unsafe_nodes>0", "output[nosuch].cosine<1"}) {
    SCOPED_TRACE(malformed);
    // Checked before the audit: no report is written.
    expect_one_line_error(cli("audit " + safe.string() + " --samples 1 --quiet --fail-on '" + malformed +
                              "' --json " + path("gated.json").string()),
                          std::string("--fail-on '") + malformed + "'");
    EXPECT_FALSE(fs::exists(path("gated.json")));
  }
  // Target names as --target takes them, and infinities either way.
  for (const char* gate : {"float16.unsafe_nodes>0", "output.max_rel_err>=Inf", "output.cosine<-inf"})
    EXPECT_EQ(cli("audit " + safe.string() + " --samples 1 --quiet --fail-on '" + gate + "'").exit_code, 0) << gate;
  // The planted overflow's output turns Inf: its cosine and SQNR are undefined, which fails their gates.
  for (const char* gate : {"output.cosine<0", "output.sqnr_db<-1000"})
    EXPECT_EQ(cli("audit " + overflow.string() + " --samples 1 --quiet --fail-on '" + gate + "'").exit_code, 1) << gate;
}

TEST_F(ReportContract, BadThresholdsAndShardsFailBeforeTheAudit) {
  const fs::path mlp = save(mlp_model(), "mlp.onnx");
  fs::create_directories(path("samples") / "s0");
  mpa::write_npy(path("samples") / "s0" / "x.npy", mpa::Tensor::from_vector<float>(normal_values(16, 1.f, 1), {2, 8}));
  for (const std::string& option : std::vector<std::string>{"--threshold jump_db=inf", "--threshold atol=nan", "--threshold atol=1e-3junk", "--shard ' 1/3'",
        "--shard +1/3", "--shard 0/3", "--shard 4/3", "--samples 3 --inputs " + path("samples").string(),
        std::string("--dist x=normal:0,1x")}) {
    SCOPED_TRACE(option);
    const CliResult r = cli("audit " + mlp.string() + " --quiet --json " + path("r.json").string() + " " + option);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(path("r.json")));
  }
  // FP8 absmax scales do not reach inside subgraphs yet: refused rather than measured unscaled.
  expect_one_line_error(cli("audit " + save(branching_model(), "branching.onnx").string() +
                            " --quiet --samples 1 --target fp8e4m3 --fp8-scaling absmax"),
                        "--fp8-scaling absmax");
}

}  // namespace
