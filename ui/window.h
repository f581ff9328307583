// The window both dashboards draw in (the audit report's, ui/dashboard.h, and the tensor report's,
// ui/tensors_dashboard.h): GLFW with an OpenGL 3.3 core context, Dear ImGui on its GLFW and OpenGL3
// backends, one frame's start and draw, and the framebuffer saved as PNG for headless screenshots.
#pragma once
#include <string>

struct GLFWwindow;

namespace mpa::ui {

// Fails (mpa::Error) without a display, saying to run under xvfb-run. Headless windows are fixed in size
// and do not wait for vsync.
GLFWwindow* open_window(int width, int height, bool headless, const std::string& title);
// Dear ImGui's context and backends, dark style, sizes scaled by font_scale (0: the monitor's content
// scale). Headless runs ignore the mouse (a screenshot shows the report, not the pointer's hover) and keep
// no imgui.ini.
void start_imgui(GLFWwindow* window, float font_scale, bool headless);
// Polls events and starts an ImGui frame.
void begin_frame();
// Draws the rendered frame (after ImGui::Render) into the back buffer; the caller swaps.
void draw_frame(GLFWwindow* window);
// Reads the back buffer (what the next swap shows) and writes it as an RGB PNG, top row first.
bool save_framebuffer_png(GLFWwindow* window, const std::string& path);
// ImGui's backends and context, the window, GLFW: the reverse of the above.
void close_window(GLFWwindow* window);

}  // namespace mpa::ui
