// The dashboard renders a real report headlessly: `mpaudit view --screenshot` under xvfb-run writes a PNG
// of the requested size that shows something (many distinct colours, not a blank or cleared window).
#include <gtest/gtest.h>
#include <stb_image.h>

#include <set>

#include "support/run_cli.h"

namespace {

using mpa::test::CliResult;
using mpa::test::run_cli;
using mpa::test::TempDir;

// The bundled attention block: its fp16 audit has unsafe nodes, NaN/Inf and an overflow to show.
std::string audit_attention(const TempDir& dir) {
  const std::string demo = std::string(MPA_SOURCE_DIR) + "/models/demo/";
  const std::string report = (dir / "attention.json").string();
  const CliResult audit = run_cli(dir, "audit " + demo + "tiny_attention.onnx --input hidden=" + demo +
                                           "attention_hidden.npy --input attention_mask=" + demo +
                                           "attention_mask.npy --target fp16 --target bf16 --quiet --json " + report);
  EXPECT_EQ(audit.exit_code, 1) << audit.err;  // its gate fails, by design
  return report;
}

TEST(DashboardScreenshot, RendersTheSelectedNodeIntoAPngOfTheRequestedSize) {
  TempDir dir;
  const std::string report = audit_attention(dir);
  const std::string png = (dir / "dashboard.png").string();
  const std::string view_command = std::string(MPA_XVFB_RUN) + " -a -s '-screen 0 1280x1024x24' " + MPA_CLI_PATH +
                                   " view " + report + " --screenshot " + png +
                                   " --width 1000 --height 700 --select mask/scale >" + (dir / "view.txt").string() +
                                   " 2>&1";
  ASSERT_EQ(std::system(view_command.c_str()), 0) << mpa::test::read_whole_file(dir / "view.txt");

  int width = 0, height = 0, channels = 0;
  unsigned char* pixels = stbi_load(png.c_str(), &width, &height, &channels, 3);
  ASSERT_NE(pixels, nullptr) << png << ": " << stbi_failure_reason();
  EXPECT_EQ(width, 1000);
  EXPECT_EQ(height, 700);
  std::set<uint32_t> colours;
  for (int64_t i = 0; i < int64_t{width} * height; ++i) {
    const unsigned char* p = pixels + 3 * i;
    colours.insert(uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]);
  }
  stbi_image_free(pixels);
  EXPECT_GT(colours.size(), 50u) << "the screenshot looks blank";
}

TEST(DashboardScreenshot, UnknownNodeIsAOneLineError) {
  TempDir dir;
  const std::string report = audit_attention(dir);
  const CliResult r = run_cli(dir, "view " + report + " --screenshot " + (dir / "x.png").string() + " --select nope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no node named 'nope'"), std::string::npos) << r.err;
}

}  // namespace
