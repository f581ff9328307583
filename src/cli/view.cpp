// `mpaudit view`: the dashboard over a report (built only with Dear ImGui, GLFW and OpenGL; MPA_HAVE_UI).
#include "cli/commands.h"
#include "ui/dashboard.h"

namespace mpa::cli {

Action add_view(CLI::App& app) {
  auto options = std::make_shared<ui::DashboardOptions>();
  app.add_option("report", options->report_path, "report written by `mpaudit audit --json` or `mpaudit merge`")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--screenshot", options->screenshot_path,
                 "render without interaction, save the window as PNG and exit (needs a display: xvfb-run)");
  app.add_option("--width", options->width, "window width in pixels")->check(CLI::Range(320, 8192));
  app.add_option("--height", options->height, "window height in pixels")->check(CLI::Range(240, 8192));
  app.add_option("--select", options->selected_node, "node shown in the inspector at start");
  app.add_option("--filter", options->node_filter, "initial node table filter, e.g. 'overflow>0' or 'MatMul iso.sqnr_db<40'");
  return [options] { return ui::run_dashboard(*options); };
}

}  // namespace mpa::cli
