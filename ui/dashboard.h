// The dashboard: a Dear ImGui window on GLFW + OpenGL 3 that shows one audit report. Interactive by
// default; with a screenshot path it renders a few frames, saves the window as PNG and returns.
#pragma once
#include <string>

namespace mpa::ui {

struct DashboardOptions {
  std::string report_path;
  std::string screenshot_path;  // empty: interactive
  int width = 1400, height = 900;
  std::string selected_node;    // preselected in the inspector (empty: the first unsafe node, if any)
  std::string node_filter;      // initial node table filter (ui/view_model.h's language); cut to the box's size
};

// Returns the process exit code (0). Fails with mpa::Error when the report cannot be read, the node to
// select does not exist, there is no display, or the screenshot cannot be written.
int run_dashboard(const DashboardOptions& options);

}  // namespace mpa::ui
