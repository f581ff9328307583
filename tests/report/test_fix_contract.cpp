// `mpaudit fix` on models whose FP16 culprits are known by construction: the keep-set is exactly the set the
// math needs, each kept node is shown needed, the report validates against reports/schema/mpaudit.fix.1.json
// and is the same bytes whatever the thread count, the keep-lists name the set, the exported mixed-precision
// model has the types and Casts the set implies and runs in mpaudit, and bad options exit 2.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "reports/fix_report.h"
#include "support/json_schema.h"
#include "support/model_builder.h"
#include "support/run_cli.h"

using mpa::test::ModelBuilder;
using mpa::test::read_whole_file;
using mpa::test::run_cli;
using mpa::test::TempDir;
namespace fs = std::filesystem;

namespace {

const mpa::test::JsonSchema& fix_schema() {
  static const mpa::test::JsonSchema schema(MPA_FIX_SCHEMA_PATH);
  return schema;
}

// rms = sqrt(mean((300 x)^2)) / 300 over rows of 64: the squares of x ~ N(0, 1) scaled by 300 pass 65504, so
// Square overflows in fp16, and the mean of the squares too; Sqrt brings them back into range, but only when
// it reads the mean in fp32. Scale and Unscale are fine in fp16. Needed: exactly {Square, Mean, Root}.
fs::path root_mean_square_model(const TempDir& dir) {
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {4, 64}).output("rms");
  b.initializer("s", {}, {300.f});
  b.node("Mul", {"x", "s"}, {"scaled"}, "Scale");
  b.node("Mul", {"scaled", "scaled"}, {"squares"}, "Square");
  ModelBuilder::set_ints(b.node("ReduceMean", {"squares"}, {"mean"}, "Mean"), "axes", {1});
  b.node("Sqrt", {"mean"}, {"root"}, "Root");
  b.node("Div", {"root", "s"}, {"rms"}, "Unscale");
  const fs::path path = dir / "rms.onnx";
  b.save(path);
  return path;
}

// log(factor x) + 20 for x in [0.5, 1). With factor 1e-8, the factor itself flushes to zero in fp16 (Tiny
// reads it in fp32 only when kept) and so would its product, which Log makes -inf of unless it reads it in
// fp32: needed, exactly {Tiny, Log}; Offset is fine in fp16. With factor 1e-3 nothing needs keeping.
fs::path log_model(const TempDir& dir, float factor = 1e-8f) {
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {4, 16}).output("y");
  b.initializer("tiny", {}, {factor});
  b.initializer("twenty", {}, {20.f});
  b.node("Mul", {"x", "tiny"}, {"t"}, "Tiny");
  b.node("Log", {"t"}, {"l"}, "Log");
  b.node("Add", {"l", "twenty"}, {"y"}, "Offset");
  const fs::path path = dir / "log.onnx";
  b.save(path);
  return path;
}

std::set<std::string> kept_nodes(const nlohmann::json& report) {
  std::set<std::string> names;
  for (const auto& k : report.at("keep")) names.insert(k.at("node").get<std::string>());
  return names;
}

nlohmann::json fix(const TempDir& dir, const fs::path& model, const std::string& extra, int expected_exit,
                   const std::string& json_name = "fix.json") {
  const auto r = run_cli(dir, "fix " + model.string() + " --random-inputs --samples 3 --quiet --json " +
                                  (dir / json_name).string() + " " + extra);
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  const nlohmann::json report = nlohmann::json::parse(read_whole_file(dir / json_name));
  EXPECT_EQ(fix_schema().violations(report), "");
  return report;
}

struct Exported {
  std::map<std::string, const onnx::NodeProto*> nodes;
  std::map<std::string, int> initializer_types;
  onnx::ModelProto model;
};

void read_exported(const fs::path& path, Exported& e) {
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(e.model.ParseFromIstream(&in)) << path;
  for (const auto& n : e.model.graph().node()) e.nodes[n.name()] = &n;
  for (const auto& t : e.model.graph().initializer()) e.initializer_types[t.name()] = t.data_type();
}

std::vector<std::string> inputs_of(const onnx::NodeProto& node) { return {node.input().begin(), node.input().end()}; }

}  // namespace

TEST(FixContract, KeepsExactlyTheNodesAnOverflowingSquareNeeds) {
  TempDir dir;
  const fs::path model = root_mean_square_model(dir);
  const nlohmann::json r = fix(dir, model,
                               "--export-keep-list trtexec=" + (dir / "trt.txt").string() +
                                   " --export-keep-list names=" + (dir / "names.txt").string(),
                               0);
  EXPECT_TRUE(r.at("met").get<bool>());
  EXPECT_TRUE(r.at("minimal").get<bool>());
  EXPECT_EQ(kept_nodes(r), (std::set<std::string>{"Square", "Mean", "Root"}));
  // Each kept node is needed: the run without it fails a gate, and the report says which and by how much.
  for (const auto& k : r.at("keep")) {
    ASSERT_FALSE(k.at("needed_because").empty()) << k.at("node");
    for (const auto& g : k.at("needed_because")) EXPECT_FALSE(g.at("held").get<bool>());
  }
  // All in fp16 fails (the squares overflow); with the set every gate holds.
  bool failed_before = false;
  for (const auto& g : r.at("before")) failed_before = failed_before || !g.at("held").get<bool>();
  EXPECT_TRUE(failed_before);
  for (const auto& g : r.at("after")) EXPECT_TRUE(g.at("held").get<bool>()) << g;
  const std::string trt = read_whole_file(dir / "trt.txt");
  EXPECT_NE(trt.find("--precisionConstraints=obey"), std::string::npos) << trt;
  for (const char* node : {"Square:fp32", "Mean:fp32", "Root:fp32"})
    EXPECT_NE(trt.find(node), std::string::npos) << trt;
  std::set<std::string> names;
  std::istringstream lines(read_whole_file(dir / "names.txt"));
  for (std::string line; std::getline(lines, line);) names.insert(line);
  EXPECT_EQ(names, kept_nodes(r));
}

// Per node, the report gives its outputs against the reference with the whole model in fp16 and with the set:
// Square overflows before (NaN/Inf downstream, through Root) and is exact-ish after; the kept flags are the
// set; `--audit-json` writes the audit of the same model the dashboard shows it over; the report reads back
// to the same bytes.
TEST(FixContract, GivesEveryNodesErrorBeforeAndAfterAndReadsBack) {
  TempDir dir;
  const fs::path model = root_mean_square_model(dir);
  const nlohmann::json r = fix(dir, model, "--audit-json " + (dir / "audit.json").string(), 0);
  ASSERT_EQ(r.at("nodes").size(), 5u);
  EXPECT_EQ(r.at("cost").at("node_figure_runs").get<int>(), 3);
  std::map<std::string, nlohmann::json> nodes;
  for (const auto& n : r.at("nodes")) nodes[n.at("node").get<std::string>()] = n;
  for (const auto& [name, n] : nodes) EXPECT_EQ(n.at("kept").get<bool>(), kept_nodes(r).count(name) == 1) << name;
  // Before: the squares overflow to Inf; the root of the Inf mean is Inf, beyond every finite figure.
  EXPECT_GT(nodes.at("Square").at("before").at("nonfinite").get<int>(), 0);
  EXPECT_GT(nodes.at("Root").at("before").at("nonfinite").get<int>(), 0);
  EXPECT_EQ(nodes.at("Scale").at("before"), nodes.at("Scale").at("after")) << "Scale is upstream of every change";
  for (const auto& [name, n] : nodes) {
    EXPECT_EQ(n.at("after").at("nonfinite").get<int>(), 0) << name;
    EXPECT_GT(n.at("after").at("sqnr_db").get<double>(), 40) << name;
  }
  EXPECT_LE(nodes.at("Unscale").at("after").at("max_rel_err").get<double>(), 1e-2);
  const nlohmann::json audit = nlohmann::json::parse(read_whole_file(dir / "audit.json"));
  EXPECT_EQ(audit.at("model").at("sha256"), r.at("model").at("sha256"));
  const std::string text = read_whole_file(dir / "fix.json");
  EXPECT_EQ(mpa::report::serialize(mpa::report::read_fix_report((dir / "fix.json").string())), text);
}

// A report written before the per-node figures still reads (nodes empty); a corrupt one is refused naming
// the field.
TEST(FixContract, ReadsReportsWithoutNodeFiguresAndRefusesCorruptOnes) {
  TempDir dir;
  nlohmann::json r = fix(dir, root_mean_square_model(dir), "", 0);
  r.erase("nodes");
  r.at("cost").erase("node_figure_runs");
  EXPECT_EQ(fix_schema().violations(r), "");
  const mpa::report::FixReport old = mpa::report::fix_report_from_json(r);
  EXPECT_TRUE(old.nodes.empty());
  EXPECT_EQ(old.keep.size(), 3u);
  r.at("cost").at("mixed_runs") = -1;
  try {
    mpa::report::fix_report_from_json(r);
    ADD_FAILURE() << "a negative run count was read";
  } catch (const mpa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mixed_runs"), std::string::npos) << e.what();
  }
}

// The recipes are judged beside the search: on this model pytorch-autocast keeps Log (its float32 list names
// log) and fails, since Tiny's flushed product reaches Log first; the others keep nothing here.
TEST(FixContract, JudgesTheRecipesOnTheSameSamples) {
  TempDir dir;
  const nlohmann::json r = fix(dir, log_model(dir), "--dist x=uniform:0.5,1", 0);
  std::map<std::string, nlohmann::json> presets;
  for (const auto& p : r.at("presets")) presets[p.at("name").get<std::string>()] = p;
  ASSERT_EQ(presets.size(), 3u);
  EXPECT_EQ(presets.at("pytorch-autocast").at("kept").get<int>(), 1);
  EXPECT_FALSE(presets.at("pytorch-autocast").at("pass").get<bool>());
  EXPECT_EQ(presets.at("norm-softmax").at("kept").get<int>(), 0);
  EXPECT_FALSE(presets.at("norm-softmax").at("pass").get<bool>());
}

// --keep-fp32-ops and --keep-fp32-preset name nodes by op type in `audit` and `run` too; a bad name exits 2.
TEST(FixContract, RecipesKeepNodesByOpTypeInEveryCommand) {
  TempDir dir;
  const fs::path model = root_mean_square_model(dir);
  ASSERT_EQ(run_cli(dir, "audit " + model.string() + " --random-inputs --quiet --keep-fp32-ops Mul,Sqrt --json " +
                             (dir / "a.json").string())
                .exit_code,
            1);
  const nlohmann::json audit = nlohmann::json::parse(read_whole_file(dir / "a.json"));
  EXPECT_EQ(audit.at("config").at("keep_fp32"), nlohmann::json({"Root", "Scale", "Square"}));
  const auto run =
      run_cli(dir, "run " + model.string() + " --random-inputs --precision fp16 --keep-fp32-preset norm-softmax");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto bad = run_cli(dir, "run " + model.string() + " --random-inputs --keep-fp32-preset tensorrt");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--keep-fp32-preset 'tensorrt': no such preset (pytorch-autocast, norm-softmax, "
                         "onnxconverter-default)"),
            std::string::npos)
      << bad.err;
}

TEST(FixContract, KeepsTheProducerAndTheLogOfAFlushedValue) {
  TempDir dir;
  const nlohmann::json r = fix(dir, log_model(dir), "--dist x=uniform:0.5,1", 0);
  EXPECT_EQ(kept_nodes(r), (std::set<std::string>{"Tiny", "Log"}));
  EXPECT_TRUE(r.at("minimal").get<bool>());
}

TEST(FixContract, KeepsNothingWhenTheModelMeetsTheGatesInTheFormat) {
  TempDir dir;
  const nlohmann::json r = fix(dir, log_model(dir, 1e-3f), "--dist x=uniform:0.5,1", 0);
  EXPECT_TRUE(r.at("keep").empty());
  EXPECT_EQ(r.at("trials").size(), 1u);
  // The whole model in fp16 is the audit's own target pass: nothing more runs for the search.
  EXPECT_EQ(r.at("cost").at("mixed_runs").get<int>(), 0);
  EXPECT_EQ(r.at("cost").at("reference_runs").get<int>(), 0);
}

// The whole-model figures read from the audit are those of a run of it: a top1_agree gate (which the audit's
// report cannot answer) makes fix run it, and every other gate's value agrees to the bit.
TEST(FixContract, WholeModelFiguresFromTheAuditEqualARun) {
  TempDir dir;
  const fs::path model = root_mean_square_model(dir);
  const nlohmann::json from_audit = fix(dir, model, "--dist x=normal:0,0.1", 0, "audit.json");
  const nlohmann::json from_run = fix(dir, model,
                                      "--dist x=normal:0,0.1 --gate 'mismatch_frac<=0' --gate 'nonfinite<=0' "
                                      "--gate 'top1_agree>=0'",
                                      0, "run.json");
  EXPECT_EQ(from_audit.at("cost").at("mixed_runs").get<int>(), 0);
  EXPECT_EQ(from_run.at("cost").at("mixed_runs").get<int>(), 1);
  ASSERT_EQ(from_audit.at("before").size(), 2u);
  EXPECT_EQ(from_audit.at("before")[0], from_run.at("before")[0]);
  EXPECT_EQ(from_audit.at("before")[1], from_run.at("before")[1]);
}

TEST(FixContract, ReportIsTheSameBytesWhateverTheThreads) {
  TempDir dir;
  const fs::path model = root_mean_square_model(dir);
  fix(dir, model, "--threads 1", 0, "one.json");
  fix(dir, model, "--threads 2", 0, "two.json");
  EXPECT_EQ(read_whole_file(dir / "one.json"), read_whole_file(dir / "two.json"));
}

TEST(FixContract, BadGatesAndExportsExitTwoNamingThem) {
  TempDir dir;
  const fs::path model = root_mean_square_model(dir);
  const auto bad_metric = run_cli(dir, "fix " + model.string() + " --random-inputs --gate 'loudness<=1'");
  EXPECT_EQ(bad_metric.exit_code, 2);
  EXPECT_NE(bad_metric.err.find("unknown metric 'loudness'"), std::string::npos) << bad_metric.err;
  const auto bad_output = run_cli(dir, "fix " + model.string() + " --random-inputs --gate 'output[nope].cosine>=0.9'");
  EXPECT_EQ(bad_output.exit_code, 2);
  EXPECT_NE(bad_output.err.find("no floating output 'nope'"), std::string::npos) << bad_output.err;
  const auto bad_export = run_cli(dir, "fix " + model.string() + " --random-inputs --export-keep-list tflite=x.txt");
  EXPECT_EQ(bad_export.exit_code, 2);
  EXPECT_NE(bad_export.err.find("unknown format 'tflite'"), std::string::npos) << bad_export.err;
  const auto two_targets = run_cli(dir, "fix " + model.string() + " --random-inputs --target fp16 --target bf16");
  EXPECT_EQ(two_targets.exit_code, 2);
  EXPECT_NE(two_targets.err.find("one target format at a time"), std::string::npos) << two_targets.err;
}

// The keep-set {Square, Mean, Root} in fp32, Scale and Unscale in fp16: both read the scale, converted in
// place; Casts where a value crosses between the islands and at the float32 input and output.
TEST(FixContract, ExportsTheKeepSetAsAMixedPrecisionModel) {
  TempDir dir;
  const fs::path out = dir / "rms.fp16.onnx";
  const nlohmann::json r = fix(dir, root_mean_square_model(dir), "--export-onnx " + out.string(), 0);
  ASSERT_TRUE(r.at("export").is_object()) << r.dump();
  EXPECT_EQ(r.at("export").at("path"), out.string());
  EXPECT_EQ(r.at("export").at("format"), "fp16");
  EXPECT_EQ(r.at("export").at("nodes_in_target").get<int>(), 2);
  EXPECT_EQ(r.at("export").at("nodes_in_fp32").get<int>(), 3);
  EXPECT_EQ(r.at("export").at("casts_inserted").get<int>(), 4);
  EXPECT_EQ(r.at("export").at("initializers_converted").get<int>(), 1);
  Exported e;
  read_exported(out, e);
  EXPECT_EQ(e.initializer_types, (std::map<std::string, int>{{"s", onnx::TensorProto::FLOAT16}}));
  EXPECT_EQ(inputs_of(*e.nodes.at("Scale")), (std::vector<std::string>{"x_to_fp16", "s"}));
  EXPECT_EQ(inputs_of(*e.nodes.at("Square")), (std::vector<std::string>{"scaled_to_fp32", "scaled_to_fp32"}));
  EXPECT_EQ(inputs_of(*e.nodes.at("Unscale")), (std::vector<std::string>{"root_to_fp16", "s"}));
  for (const char* cast : {"x_to_fp16", "scaled_to_fp32", "root_to_fp16", "rms_fp16_to_fp32"})
    EXPECT_EQ(e.nodes.at(cast)->op_type(), "Cast") << cast;
  EXPECT_EQ(e.model.graph().output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  const auto run = run_cli(dir, "run " + out.string() + " --random-inputs");
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

// Tiny and Log kept: the flushing factor stays float32 (only Tiny reads it), Offset's twenty becomes fp16;
// with --keep-io-types false the input and output are float16 and mpaudit runs the model on fp16 tensors.
TEST(FixContract, ExportKeepsAFlushingInitializerOfAKeptNodeAndCanTypeTheIoInFp16) {
  TempDir dir;
  const fs::path out = dir / "log.fp16.onnx";
  const nlohmann::json r =
      fix(dir, log_model(dir), "--dist x=uniform:0.5,1 --keep-io-types false --export-onnx " + out.string(), 0);
  EXPECT_FALSE(r.at("export").at("keep_io_types").get<bool>());
  Exported e;
  read_exported(out, e);
  EXPECT_EQ(e.initializer_types,
            (std::map<std::string, int>{{"tiny", onnx::TensorProto::FLOAT}, {"twenty", onnx::TensorProto::FLOAT16}}));
  EXPECT_EQ(inputs_of(*e.nodes.at("Tiny")), (std::vector<std::string>{"x_to_fp32", "tiny"}));
  EXPECT_EQ(inputs_of(*e.nodes.at("Offset")), (std::vector<std::string>{"l_to_fp16", "twenty"}));
  EXPECT_EQ(e.model.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(e.model.graph().output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
  const auto run = run_cli(dir, "run " + out.string() + " --random-inputs --dist x=uniform:0.5,1 --save-outputs " +
                                    (dir / "outs").string() + " --raw-format");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::exists(dir / "outs" / "y.npy"));
}

TEST(FixContract, ExportRefusesFormatsOnnxCannotHoldAsOneType) {
  TempDir dir;
  const auto fp8 = run_cli(dir, "fix " + root_mean_square_model(dir).string() +
                                    " --random-inputs --target fp8e4m3 --export-onnx " + (dir / "o.onnx").string());
  EXPECT_EQ(fp8.exit_code, 2);
  EXPECT_NE(fp8.err.find("--export-onnx writes fp16 or bf16 models"), std::string::npos) << fp8.err;
  EXPECT_FALSE(fs::exists(dir / "o.onnx"));
}

// y = relu(x * 1e-3) for x up to 2e5: the input overflows fp16 before any node runs. With float32 inputs
// (--keep-io-types true) the Mul reads it in fp32 when kept; with fp16 inputs no keep-set helps, and fix says
// so with the input's numbers after one run with every node in fp32.
TEST(FixContract, SaysWhenAnInputOverflowsTheFormatBeforeAnyNodeRuns) {
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {4}).output("z");
  b.initializer("s", {}, {1e-3f});
  b.node("Mul", {"x", "s"}, {"y"}, "scale");
  b.node("Relu", {"y"}, {"z"}, "relu");
  b.save(dir / "big.onnx");
  const auto run = [&](const std::string& io, int exit_code) {
    const auto r = run_cli(dir, "fix " + (dir / "big.onnx").string() + " --random-inputs --dist x=uniform:1e5,2e5 " +
                                    "--quiet --json " + (dir / "fix.json").string() + " --keep-io-types " + io);
    EXPECT_EQ(r.exit_code, exit_code) << r.err;
    const nlohmann::json report = nlohmann::json::parse(read_whole_file(dir / "fix.json"));
    EXPECT_EQ(fix_schema().violations(report), "");
    return report;
  };
  EXPECT_EQ(kept_nodes(run("true", 0)), (std::set<std::string>{"scale"}));
  const nlohmann::json r = run("false", 1);
  EXPECT_FALSE(r.at("met").get<bool>());
  const std::string note = r.at("note").get<std::string>();
  EXPECT_NE(note.find("input 'x' overflows fp16 before any node runs (--keep-io-types false): 4 of 4 values beyond "
                      "65504"),
            std::string::npos)
      << note;
  ASSERT_EQ(r.at("trials").size(), 2u);
  EXPECT_EQ(r.at("trials")[1].at("purpose"), "every candidate in FP32");
}

// A run reruns only what its keep-set changes: a trial keeping every node of the rms model in fp32 is the
// reference run, whose values are kept, so it runs nothing; others rerun part of the model. The cost adds up
// the trials'. The reference is the audit's own reference pass, handed over with its values: it does not run
// again (reference_runs 0), and its values are the base the all-kept trial reuses.
TEST(FixContract, CountsWhatTheIncrementalRunsExecuted) {
  TempDir dir;
  const nlohmann::json r = fix(dir, root_mean_square_model(dir), "", 0);
  double sum = 0;
  bool all_kept = false, partial = false;
  for (const auto& t : r.at("trials")) {
    const double cost = t.at("run_equivalents").get<double>();
    EXPECT_LE(cost, 1.0) << t;
    sum += cost;
    if (t.at("kept") == 5) {
      all_kept = true;
      EXPECT_EQ(cost, 0.0) << t;
    }
    partial = partial || (cost > 0 && cost < 1);
  }
  EXPECT_TRUE(all_kept);
  EXPECT_TRUE(partial);
  const auto& cost = r.at("cost");
  EXPECT_EQ(cost.at("reference_runs"), 0);
  EXPECT_NEAR(cost.at("mixed_run_equivalents").get<double>(), sum, 1e-9);
  EXPECT_LT(cost.at("mixed_run_equivalents").get<double>(), cost.at("mixed_runs").get<double>());
  EXPECT_NEAR(cost.at("total_run_equivalents").get<double>(),
              cost.at("audit_run_equivalents").get<double>() + cost.at("reference_runs").get<double>() + sum, 1e-9);
}

// Sets are judged on the samples in play, and a run stops at the first sample that fails a gate whatever the
// others give; the set returned is run on every sample, as is the whole model in the target format. With a
// cosine gate, which some samples cannot bound, every run is on every sample.
TEST(FixContract, JudgesOnTheSamplesInPlayAndRunsTheSetOnEverySample) {
  TempDir dir;
  const nlohmann::json r = fix(dir, root_mean_square_model(dir), "", 0);
  ASSERT_EQ(r.at("config").at("samples"), 3);
  const auto& trials = r.at("trials");
  EXPECT_EQ(trials.front().at("samples"), 3);
  bool fewer = false;
  for (const auto& t : trials) {
    EXPECT_GE(t.at("samples").get<int>(), 1) << t;
    EXPECT_LE(t.at("samples").get<int>(), 3) << t;
    fewer = fewer || t.at("samples").get<int>() < 3;
  }
  EXPECT_TRUE(fewer);
  // The last run of the final set passed on every sample.
  const auto last = std::find_if(trials.rbegin(), trials.rend(),
                                 [&](const auto& t) { return t.at("kept") == r.at("keep").size(); });
  ASSERT_NE(last, trials.rend());
  EXPECT_TRUE(last->at("pass").get<bool>());
  EXPECT_EQ(last->at("samples"), 3);
  // The set had passed on the sample in play: that sample reuses its values, only the two others run.
  EXPECT_EQ(last->at("purpose"), "verify on every sample");
  EXPECT_LE(last->at("run_equivalents").get<double>(), 2.0 / 3 + 1e-9) << *last;
  for (const auto& k : r.at("keep")) {
    EXPECT_GE(k.at("needed_samples").get<int>(), 1) << k;
    EXPECT_LE(k.at("needed_samples").get<int>(), 3) << k;
  }
  EXPECT_EQ(kept_nodes(r), (std::set<std::string>{"Square", "Mean", "Root"}));

  const nlohmann::json cosine = fix(dir, root_mean_square_model(dir), "--gate 'cosine>=0.9999'", 0, "cosine.json");
  for (const auto& t : cosine.at("trials")) EXPECT_EQ(t.at("samples"), 3) << t;
}
