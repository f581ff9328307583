#include "ui/window.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <cstdlib>
#include <vector>

#include "common/error.h"

namespace mpa::ui {

namespace {

// GLFW reports errors through a callback; keep the last one for our own one-line message instead of
// letting it print.
std::string last_glfw_error;
void remember_glfw_error(int /*code*/, const char* description) { last_glfw_error = description; }

}  // namespace

GLFWwindow* open_window(int width, int height, bool headless, const std::string& title) {
  glfwSetErrorCallback(remember_glfw_error);
  const char* display = std::getenv("DISPLAY");
  const char* wayland_display = std::getenv("WAYLAND_DISPLAY");
  require((display && *display) || (wayland_display && *wayland_display), "no display: run under xvfb-run");
  require(glfwInit() == GLFW_TRUE, "no display (" + last_glfw_error + "): run under xvfb-run");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_RESIZABLE, headless ? GLFW_FALSE : GLFW_TRUE);
  GLFWwindow* window = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    fail("cannot open a window with OpenGL 3.3 (" + last_glfw_error + ")");
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless ? 0 : 1);  // vsync when a person watches
  return window;
}

void start_imgui(GLFWwindow* window, float font_scale, bool headless) {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  if (headless) io.ConfigFlags |= ImGuiConfigFlags_NoMouse;
  ImGui::StyleColorsDark();
  // HiDPI: scale fonts and sizes with the monitor's content scale, or as asked.
  float x_scale = 1, y_scale = 1;
  glfwGetWindowContentScale(window, &x_scale, &y_scale);
  const float scale = font_scale > 0 ? font_scale : x_scale > 1.25f ? x_scale : 1.0f;
  if (scale != 1.0f) {
    io.FontGlobalScale = scale;
    ImGui::GetStyle().ScaleAllSizes(scale);
  }
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");  // the GLSL of the OpenGL 3.3 core context open_window asks for
}

void begin_frame() {
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
}

void draw_frame(GLFWwindow* window) {
  int framebuffer_width = 0, framebuffer_height = 0;
  glfwGetFramebufferSize(window, &framebuffer_width, &framebuffer_height);
  glViewport(0, 0, framebuffer_width, framebuffer_height);
  glClearColor(0.08f, 0.08f, 0.10f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

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

void close_window(GLFWwindow* window) {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
}

}  // namespace mpa::ui
