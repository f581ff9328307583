// The dashboard's main loop, shaped like Dear ImGui's example_glfw_opengl3: setup -> frame loop -> cleanup.
// Headless screenshots render a fixed number of frames into the window (under Xvfb on a server) and read
// the framebuffer back with glReadPixels.
#include "ui/dashboard.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <cstdlib>
#include <vector>

#include "common/error.h"
#include "ui/panels.h"

namespace mpa::ui {

namespace {

// GLFW reports errors through a callback; keep the last one for our own one-line message instead of
// letting it print.
std::string last_glfw_error;
void remember_glfw_error(int /*code*/, const char* description) { last_glfw_error = description; }

// Frames rendered before a screenshot: ImGui sizes auto-fit windows and table columns over the first
// frames, and the selection made by --select scrolls the table one frame later.
constexpr int kScreenshotFrames = 4;

// Where each panel sits on first use, as fractions of the window: header across the top; alerts, the
// divergence plot and the node table down the left; the inspector on the right.
struct PanelPlace {
  float x, y, width, height;
};
constexpr float kHeaderHeight = 0.11f, kAlertsHeight = 0.15f, kPlotHeight = 0.32f, kLeftWidth = 0.60f;
constexpr PanelPlace kHeaderPlace{0, 0, 1, kHeaderHeight};
constexpr PanelPlace kAlertsPlace{0, kHeaderHeight, kLeftWidth, kAlertsHeight};
constexpr PanelPlace kPlotPlace{0, kHeaderHeight + kAlertsHeight, kLeftWidth, kPlotHeight};
constexpr PanelPlace kTablePlace{0, kHeaderHeight + kAlertsHeight + kPlotHeight, kLeftWidth,
                                 1 - kHeaderHeight - kAlertsHeight - kPlotHeight};
constexpr PanelPlace kInspectorPlace{kLeftWidth, kHeaderHeight, 1 - kLeftWidth, 1 - kHeaderHeight};

void place_next_window(const PanelPlace& place) {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos(ImVec2(place.x * display.x, place.y * display.y), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(place.width * display.x, place.height * display.y), ImGuiCond_FirstUseEver);
}

// Reads the back buffer (what the next swap shows) and writes it as an RGB PNG, top row first.
bool save_framebuffer_png(GLFWwindow* window, const std::string& path) {
  int width = 0, height = 0;
  glfwGetFramebufferSize(window, &width, &height);
  std::vector<unsigned char> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  const int row_bytes = width * 3;
  stbi_flip_vertically_on_write(1);  // OpenGL's rows run bottom-up
  return stbi_write_png(path.c_str(), width, height, 3, pixels.data(), row_bytes) != 0;
}

}  // namespace

int run_dashboard(const DashboardOptions& options) {
  // Setup 1: the report, before any window opens, so a bad file fails fast and headless.
  ReportModel model(report::read_report(options.report_path), options.report_path);
  DashboardSelection selection;
  selection.target = model.targets().empty() ? std::string() : model.targets().front();
  if (!options.selected_node.empty()) {
    const int index = model.node_index(options.selected_node);
    require(index >= 0, options.report_path + ": no node named '" + options.selected_node + "'");
    selection.select_node(index);
  } else if (!selection.target.empty()) {
    selection.select_node(model.target_view(selection.target).unsafe.first_node);
  }

  // Setup 2: a window with an OpenGL 3.3 core context. GLFW needs a display; say how to get one.
  glfwSetErrorCallback(remember_glfw_error);
  const char* display = std::getenv("DISPLAY");
  const char* wayland_display = std::getenv("WAYLAND_DISPLAY");
  require((display && *display) || (wayland_display && *wayland_display), "no display: run under xvfb-run");
  require(glfwInit() == GLFW_TRUE, "no display (" + last_glfw_error + "): run under xvfb-run");
  const char* glsl_version = "#version 330";
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_RESIZABLE, options.screenshot_path.empty() ? GLFW_TRUE : GLFW_FALSE);
  const std::string title = "mpaudit - " + options.report_path;
  GLFWwindow* window = glfwCreateWindow(options.width, options.height, title.c_str(), nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    fail("cannot open a window with OpenGL 3.3 (" + last_glfw_error + ")");
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(options.screenshot_path.empty() ? 1 : 0);  // vsync when a person watches

  // Setup 3: Dear ImGui with its GLFW and OpenGL3 backends. No imgui.ini: the layout (and so every
  // screenshot) is the same on every run.
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  // A screenshot shows the report, not wherever the X server happens to leave the pointer (hover
  // highlights, tooltips).
  if (!options.screenshot_path.empty()) io.ConfigFlags |= ImGuiConfigFlags_NoMouse;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init(glsl_version);

  // Setup 4: the panels, each with its view state.
  HeaderPanel header;
  AlertsPanel alerts;
  DivergencePlotPanel divergence_plot;
  NodeTablePanel node_table;
  options.node_filter.copy(node_table.filter_text, sizeof node_table.filter_text - 1);
  NodeInspectorPanel inspector;

  // Loop: poll events, build the frame's panels, render; a screenshot run stops after a few frames and
  // reads the last one back before it is swapped away.
  bool screenshot_taken = false, screenshot_written = false;
  for (int frame = 0; !glfwWindowShouldClose(window) && !screenshot_taken; ++frame) {
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    selection.begin_frame();

    place_next_window(kHeaderPlace);
    header.Draw(model, selection, nullptr);
    place_next_window(kAlertsPlace);
    alerts.Draw(model, selection, nullptr);
    place_next_window(kPlotPlace);
    divergence_plot.Draw(model, selection, nullptr);
    place_next_window(kTablePlace);
    node_table.Draw(model, selection, nullptr);
    place_next_window(kInspectorPlace);
    inspector.Draw(model, selection, nullptr);

    ImGui::Render();
    int framebuffer_width = 0, framebuffer_height = 0;
    glfwGetFramebufferSize(window, &framebuffer_width, &framebuffer_height);
    glViewport(0, 0, framebuffer_width, framebuffer_height);
    glClearColor(0.08f, 0.08f, 0.10f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!options.screenshot_path.empty() && frame + 1 >= kScreenshotFrames) {
      screenshot_written = save_framebuffer_png(window, options.screenshot_path);
      screenshot_taken = true;
    }
    glfwSwapBuffers(window);
  }

  // Cleanup: backends, ImGui context, window, GLFW, in the reverse order of setup.
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  require(!screenshot_taken || screenshot_written, options.screenshot_path + ": cannot write the screenshot");
  return 0;
}

}  // namespace mpa::ui
