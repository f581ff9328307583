// The `mpaudit tensors` report as a contract (reports/schema/mpaudit.tensors.1.json): what the CLI writes
// validates against the schema, is the same bytes whatever the thread count, is written atomically, and
// records its gates, whose exit codes are 0 (pass) and 1 (fail). The figures themselves are checked against
// numpy by tests/tensors/check_tensors_oracle.py.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "io/npy.h"
#include "support/json_schema.h"
#include "support/run_cli.h"

using mpa::test::read_whole_file;
using mpa::test::run_cli;
using mpa::test::TempDir;
namespace fs = std::filesystem;

namespace {

const mpa::test::JsonSchema& tensors_schema() {
  static const mpa::test::JsonSchema schema(MPA_TENSORS_SCHEMA_PATH);
  return schema;
}

mpa::Tensor normal_tensor(int64_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return mpa::Tensor::from_vector(v, {n});
}

// Three steps of gradients, weights and updates; the second step's gradient overflows fp16 at 2^16.
fs::path write_run(const TempDir& dir) {
  const fs::path run = dir / "run";
  for (int step = 0; step < 3; ++step) {
    const fs::path folder = run / ("step_" + std::to_string(step));
    fs::create_directories(folder);
    mpa::write_npy(folder / "fc.grad.npy", normal_tensor(50000, step == 1 ? 10.f : 1e-3f, 1 + step));
    mpa::write_npy(folder / "weight.fc.npy", normal_tensor(4096, 0.5f, 10 + step));
    mpa::write_npy(folder / "update.fc.npy", normal_tensor(4096, 1e-4f, 20 + step));
    mpa::write_npy(folder / "steps.npy", mpa::Tensor::from_vector<int64_t>({step}, {1}));
  }
  return run;
}

std::string tensors_args(const fs::path& run, const fs::path& json, int threads) {
  return "tensors " + run.string() + " --master 'weight.*=update.*' --growth-interval 1 --json " + json.string() +
         " --threads " + std::to_string(threads) + " --quiet";
}

TEST(TensorsReportContract, ValidatesAndIsTheSameBytesWhateverTheThreads) {
  TempDir dir;
  const fs::path run = write_run(dir);
  ASSERT_EQ(run_cli(dir, tensors_args(run, dir / "one.json", 1)).exit_code, 0);
  ASSERT_EQ(run_cli(dir, tensors_args(run, dir / "two.json", 2)).exit_code, 0);
  const std::string bytes = read_whole_file(dir / "one.json");
  EXPECT_EQ(bytes, read_whole_file(dir / "two.json"));
  const auto report = nlohmann::json::parse(bytes);
  EXPECT_EQ(tensors_schema().violations(report), "");
  EXPECT_EQ(report["schema"], "mpaudit.tensors/1");
  EXPECT_EQ(report["steps"].size(), 3u);
  EXPECT_EQ(report["loss_scale"]["dynamic"]["trajectory"][1]["skipped"], true);
  EXPECT_EQ(report["master_weights"].size(), 3u);
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "left behind: " << entry.path();
}

TEST(TensorsReportContract, SchemaRefusesBrokenReports) {
  TempDir dir;
  ASSERT_EQ(run_cli(dir, tensors_args(write_run(dir), dir / "r.json", 2)).exit_code, 0);
  const auto good = nlohmann::json::parse(read_whole_file(dir / "r.json"));
  ASSERT_EQ(tensors_schema().violations(good), "");
  const std::vector<std::pair<const char*, std::function<void(nlohmann::json&)>>> breakages = {
      {"another schema id", [](nlohmann::json& r) { r["schema"] = "mpaudit.tensors/2"; }},
      {"a histogram of 85 bins", [](nlohmann::json& r) { r["steps"][0]["tensors"][0]["range"]["exp_hist"].erase(0); }},
      {"a float tensor without formats", [](nlohmann::json& r) { r["steps"][0]["tensors"][0].erase("formats"); }},
      {"a window without its upper bound",
       [](nlohmann::json& r) { r["steps"][0]["tensors"][0]["formats"]["fp16"]["scale_window"].erase("hi_log2"); }},
      {"a negative count", [](nlohmann::json& r) { r["master_weights"][0]["updated"] = -1; }},
      {"an unknown top-level key", [](nlohmann::json& r) { r["extra"] = 1; }},
  };
  for (const auto& [what, breakage] : breakages) {
    nlohmann::json broken = good;
    breakage(broken);
    EXPECT_NE(tensors_schema().violations(broken), "") << what << " was accepted";
  }
}

TEST(TensorsReportContract, GatesKeepTheirExitCodesAndAreRecorded) {
  TempDir dir;
  const fs::path run = write_run(dir);
  const auto failing = run_cli(dir, tensors_args(run, dir / "f.json", 2) + " --fail-on 'skipped_steps>0'");
  EXPECT_EQ(failing.exit_code, 1) << failing.err;
  const auto report = nlohmann::json::parse(read_whole_file(dir / "f.json"));
  ASSERT_EQ(report["gates"].size(), 1u);
  EXPECT_EQ(report["gates"][0]["failed"], true);
  EXPECT_EQ(tensors_schema().violations(report), "");
  EXPECT_EQ(run_cli(dir, tensors_args(run, dir / "p.json", 2) + " --fail-on 'bf16.overflow>0'").exit_code, 0);
  const auto typo = run_cli(dir, tensors_args(run, dir / "t.json", 2) + " --fail-on 'fp16.overflw>0'");
  mpa::test::expect_clean_error(typo, {"overflw"});
  EXPECT_FALSE(fs::exists(dir / "t.json"));
}

}  // namespace
