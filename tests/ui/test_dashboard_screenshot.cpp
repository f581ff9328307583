// The dashboard renders real reports headlessly: `mpaudit view --screenshot --view V` under xvfb-run writes a
// PNG of the requested size for every view that shows something (many distinct colours, not a blank or
// cleared window), with the unsafe verdict colour where the report has unsafe nodes and nowhere in the graph
// and report card of an all-safe report; a model audited in the window (`view MODEL.onnx`) before its
// screenshot, and its errors. Also the node-data export, which needs no window.
#include <gtest/gtest.h>
#include <stb_image.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "io/npy.h"
#include "support/run_cli.h"

namespace {

using mpa::test::CliResult;
using mpa::test::run_cli;
using mpa::test::TempDir;

const char* const kViews[] = {"table", "graph", "inspector", "histograms", "card"};
const std::string kDemo = std::string(MPA_SOURCE_DIR) + "/models/demo/";
const std::string kAttentionInputs =
    "--input hidden=" + kDemo + "attention_hidden.npy --input attention_mask=" + kDemo + "attention_mask.npy";
constexpr int kWidth = 1000, kHeight = 700;

// ui/widgets.cpp verdict_color(Unsafe), as ImGui writes it into the framebuffer.
constexpr unsigned char kUnsafe[3] = {235, 66, 61};
// ui/widgets.cpp fix_keep_color(): a fix report's keep-set.
constexpr unsigned char kFixKeep[3] = {204, 120, 250};

struct Screenshot {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;
  size_t distinct_colours() const {
    std::set<uint32_t> colours;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3) colours.insert(uint32_t{rgb[i]} << 16 | uint32_t{rgb[i + 1]} << 8 | rgb[i + 2]);
    return colours.size();
  }
  int64_t count(const unsigned char colour[3]) const {
    int64_t n = 0;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3) n += rgb[i] == colour[0] && rgb[i + 1] == colour[1] && rgb[i + 2] == colour[2];
    return n;
  }
};

// The bundled attention block (fp16: unsafe nodes, NaN/Inf, an overflow) and the bundled CNN (fp16: all
// safe), audited once for every test here.
class DashboardScreenshot : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    attention_ = (*dir_ / "attention.json").string();
    const CliResult unsafe = run_cli(*dir_, "audit " + kDemo + "tiny_attention.onnx " + kAttentionInputs +
                                                " --target fp16 --target bf16 --quiet --json " + attention_);
    EXPECT_EQ(unsafe.exit_code, 1) << unsafe.err;  // its gate fails, by design
    safe_ = (*dir_ / "cnn.json").string();
    const CliResult safe = run_cli(*dir_, "audit " + kDemo + "tiny_cnn.onnx --input image=" + kDemo +
                                              "digit.npy --target fp16 --quiet --json " + safe_);
    EXPECT_EQ(safe.exit_code, 0) << safe.err;
  }
  static void TearDownTestSuite() { dir_.reset(); }

  // `mpaudit view ARGS` under a virtual X server, as a user or CI job runs it: its own exit code and output
  // (a script inside xvfb-run keeps them apart from xvfb-run's, whose clean-up can fail after a quick exit).
  static CliResult view_under_xvfb(const std::string& args) {
    const std::string out = (*dir_ / "view.out").string(), err = (*dir_ / "view.err").string();
    const std::string status = (*dir_ / "view.status").string(), script = (*dir_ / "view.sh").string();
    std::filesystem::remove(status);
    mpa::test::write_whole_file(
        script, std::string(MPA_CLI_PATH) + " view " + args + " >" + out + " 2>" + err + "\necho $? >" + status + "\n");
    const std::string command = std::string(MPA_XVFB_RUN) + " -a -s '-screen 0 1280x1024x24' sh " + script;
    const int xvfb_status = std::system(command.c_str());
    CliResult r;
    const std::string code = mpa::test::read_whole_file(status);
    r.exit_code = code.empty() ? -1 : std::stoi(code);
    r.out = mpa::test::read_whole_file(out);
    r.err = mpa::test::read_whole_file(err);
    EXPECT_FALSE(code.empty()) << "xvfb-run did not run mpaudit (status " << xvfb_status << ")";
    return r;
  }

  // A report, or a model with its audit options.
  static Screenshot shoot(const std::string& report_or_model, const std::string& args) {
    const std::string png = (*dir_ / "shot.png").string();
    std::filesystem::remove(png);
    const CliResult r = view_under_xvfb(report_or_model + " --screenshot " + png + " --width " +
                                        std::to_string(kWidth) + " --height " + std::to_string(kHeight) + " " + args);
    Screenshot shot;
    EXPECT_EQ(r.exit_code, 0) << report_or_model << " " << args << "\n" << r.out << r.err;
    if (r.exit_code != 0) return shot;
    int channels = 0;
    unsigned char* pixels = stbi_load(png.c_str(), &shot.width, &shot.height, &channels, 3);
    EXPECT_NE(pixels, nullptr) << png << ": " << stbi_failure_reason();
    if (!pixels) return shot;
    shot.rgb.assign(pixels, pixels + static_cast<size_t>(shot.width) * static_cast<size_t>(shot.height) * 3);
    stbi_image_free(pixels);
    return shot;
  }

  static std::unique_ptr<TempDir> dir_;
  static std::string attention_, safe_;
};

std::unique_ptr<TempDir> DashboardScreenshot::dir_;
std::string DashboardScreenshot::attention_, DashboardScreenshot::safe_;

TEST_F(DashboardScreenshot, RendersTheSelectedNodeIntoAPngOfTheRequestedSize) {
  const Screenshot shot = shoot(attention_, "--select mask/scale");
  EXPECT_EQ(shot.width, kWidth);
  EXPECT_EQ(shot.height, kHeight);
  EXPECT_GT(shot.distinct_colours(), 50u) << "the screenshot looks blank";
}

TEST_F(DashboardScreenshot, EveryViewShowsTheUnsafeNodes) {
  for (const char* view : kViews) {
    const Screenshot shot = shoot(attention_, std::string("--view ") + view);
    EXPECT_EQ(shot.width, kWidth) << view;
    EXPECT_EQ(shot.height, kHeight) << view;
    EXPECT_GT(shot.distinct_colours(), 20u) << view << ": the screenshot looks blank";
    // The table's verdicts, the graph's nodes, the inspector's badge, the histograms' row labels, the
    // card's counts and bars: all in the unsafe colour.
    EXPECT_GT(shot.count(kUnsafe), 30) << view << ": no unsafe colour for a report with unsafe nodes";
  }
}

TEST_F(DashboardScreenshot, AllSafeReportHasNoUnsafeColourInGraphOrCard) {
  for (const char* view : {"graph", "card", "histograms"}) {
    const Screenshot shot = shoot(safe_, std::string("--view ") + view);
    EXPECT_EQ(shot.width, kWidth) << view;
    EXPECT_GT(shot.distinct_colours(), 20u) << view << ": the screenshot looks blank";
    EXPECT_EQ(shot.count(kUnsafe), 0) << view << ": unsafe colour in an all-safe report";
  }
}

TEST_F(DashboardScreenshot, GraphColouredByAnotherMetricWithEveryGroupOpen) {
  const Screenshot shot = shoot(attention_, "--view graph --colour-by prop.sqnr_db --expand-all --select mask/scale");
  EXPECT_GT(shot.distinct_colours(), 50u);
  EXPECT_GT(shot.count(kUnsafe), 30) << "propagated SQNR: the nodes after the overflow turn NaN, the worst bin";
}

// `view AUDIT.json --fix FIX.json`: the keep-set of `mpaudit fix` on the attention block marked in the table
// (KEEP tags, tinted rows) and ringed in the graph, the fix's summary in the table view; none of it without
// --fix. A fix report of another model is a one-line error.
TEST_F(DashboardScreenshot, FixReportMarksTheKeepSetInTableAndGraph) {
  const std::string fix = (*dir_ / "fix.json").string();
  const CliResult made = run_cli(
      *dir_, "fix " + kDemo + "tiny_attention.onnx " + kAttentionInputs + " --target fp16 --quiet --json " + fix);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const nlohmann::json report = nlohmann::json::parse(mpa::test::read_whole_file(fix));
  ASSERT_FALSE(report.at("keep").empty()) << "the attention block's fp16 traps need keeping";
  for (const char* view : {"table", "graph"}) {
    const Screenshot with = shoot(attention_, std::string("--view ") + view + " --fix " + fix);
    EXPECT_GT(with.distinct_colours(), 50u) << view << ": the screenshot looks blank";
    EXPECT_GT(with.count(kFixKeep), 40) << view << ": the kept nodes are not marked";
    const Screenshot without = shoot(attention_, std::string("--view ") + view);
    EXPECT_EQ(without.count(kFixKeep), 0) << view << ": keep marks without a fix report";
  }
  const std::string other = (*dir_ / "other_fix.json").string();
  const CliResult cnn = run_cli(*dir_, "fix " + kDemo + "tiny_cnn.onnx --input image=" + kDemo +
                                           "digit.npy --target fp16 --quiet --json " + other);
  ASSERT_EQ(cnn.exit_code, 0) << cnn.err;
  const CliResult wrong =
      view_under_xvfb(attention_ + " --fix " + other + " --screenshot " + (*dir_ / "x.png").string());
  mpa::test::expect_clean_error(wrong, {"a fix report of another model"});
}

// A `mpaudit tensors` report opens in the tensor dashboard: the table, the selected gradient's histogram
// with the scale window's dashed edges, the loss-scale plot with its skipped step, the pairs' table.
TEST_F(DashboardScreenshot, TensorsReportShowsItsTableHistogramWindowAndScalePlot) {
  const std::filesystem::path run = *dir_ / "tensors_run";
  for (int step = 0; step < 3; ++step) {
    const std::filesystem::path folder = run / ("step_" + std::to_string(step));
    std::filesystem::create_directories(folder);
    std::vector<float> gradient(4000), weight(512), update(512);
    for (size_t i = 0; i < gradient.size(); ++i) gradient[i] = std::ldexp(1.0f + float(i % 13) / 16, -int(i % 30) - 4);
    if (step == 1) gradient[7] = INFINITY;  // overflows at any scale: the step is skipped
    for (size_t i = 0; i < weight.size(); ++i) {
      weight[i] = 0.5f + float(i) / 1024;
      update[i] = std::ldexp(1.0f, -int(i % 20) - 4);
    }
    mpa::write_npy(folder / "fc.grad.npy", mpa::Tensor::from_vector(gradient, {4000}));
    mpa::write_npy(folder / "weight.fc.npy", mpa::Tensor::from_vector(weight, {512}));
    mpa::write_npy(folder / "update.fc.npy", mpa::Tensor::from_vector(update, {512}));
  }
  const std::string report = (*dir_ / "tensors.json").string();
  const CliResult audit =
      run_cli(*dir_, "tensors " + run.string() + " --master 'weight.*=update.*' --growth-interval 1 " +
                         "--quiet --json " + report);
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  const Screenshot shot = shoot(report, "--select step_0/fc.grad");
  EXPECT_EQ(shot.width, kWidth);
  EXPECT_EQ(shot.height, kHeight);
  EXPECT_GT(shot.distinct_colours(), 50u) << "the screenshot looks blank";
  constexpr unsigned char kWindowEdge[3] = {250, 230, 80};  // ui/widgets.cpp: the scale window's dashed edges
  EXPECT_GT(shot.count(kWindowEdge), 20) << "no scale window drawn on the histogram";
  EXPECT_GT(shot.count(kUnsafe), 20) << "the skipped step and the empty windows are drawn in the unsafe colour";
  const CliResult unknown = view_under_xvfb(report + " --select no/such --screenshot " + (*dir_ / "x.png").string());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no tensor 'no/such'"), std::string::npos) << unknown.err;
}

// `view MODEL.onnx`: the audit runs in the window, and the screenshot waits for its final report.
TEST_F(DashboardScreenshot, AuditsAModelInTheWindowBeforeTheScreenshot) {
  const Screenshot shot =
      shoot(kDemo + "tiny_attention.onnx", kAttentionInputs + " --select mask/scale --keep-fp32 mask/scale");
  EXPECT_EQ(shot.width, kWidth);
  EXPECT_EQ(shot.height, kHeight);
  EXPECT_GT(shot.distinct_colours(), 50u) << "the screenshot looks blank";
  EXPECT_GT(shot.count(kUnsafe), 30) << "the finished audit's unsafe nodes are not on screen";
}

TEST_F(DashboardScreenshot, AModelWithABadInputIsAOneLineError) {
  const CliResult r = view_under_xvfb(kDemo + "tiny_attention.onnx --input hidden=" + kDemo +
                                      "attention_hidden.npy --screenshot " + (*dir_ / "x.png").string());
  mpa::test::expect_clean_error(r, {"input 'attention_mask' was not given"});
}

TEST_F(DashboardScreenshot, AuditOptionsNeedAModel) {
  const CliResult r =
      run_cli(*dir_, "view " + attention_ + " --target bf16 --screenshot " + (*dir_ / "x.png").string());
  mpa::test::expect_clean_error(r, {"--target is an audit option"});
}

TEST_F(DashboardScreenshot, UnknownNodeIsAOneLineError) {
  const CliResult r = run_cli(*dir_, "view " + attention_ + " --screenshot " + (*dir_ / "x.png").string() + " --select nope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no node named 'nope'"), std::string::npos) << r.err;
}

TEST_F(DashboardScreenshot, ExportsModelExplorerNodeDataWithoutAWindow) {
  const std::string out = (*dir_ / "node_data.json").string();
  const CliResult r = run_cli(*dir_, "view " + attention_ + " --export-node-data " + out + " --graph-id g");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto data = nlohmann::json::parse(mpa::test::read_whole_file(out));
  ASSERT_TRUE(data.contains("g"));
  const auto& node = data["g"]["results"]["mask/scale"];
  EXPECT_EQ(node["value"].get<double>(), 2);  // unsafe
  EXPECT_EQ(node["bgColor"], "#eb423d");
  EXPECT_EQ(data["g"]["thresholds"].size(), 3u);
}

}  // namespace
