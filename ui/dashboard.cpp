// The dashboard's main loop, shaped like Dear ImGui's example_glfw_opengl3: setup -> frame loop -> cleanup.
// Headless screenshots render frames into the window (under Xvfb on a server) until the view is settled
// and read the framebuffer back with glReadPixels; --bench-frames times frames the same way.
//   [SECTION] views: which panels each shows and where
//   [SECTION] saved state: imgui.ini in the user's config folder, with the current view
//   [SECTION] files: open another report, export node data, save PNG
//   [SECTION] run_dashboard
#include "ui/dashboard.h"

#include <GLFW/glfw3.h>
#include <imgui_internal.h>  // ImGuiSettingsHandler: our own entry in imgui.ini
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "common/error.h"
#include "ui/panels.h"
#include "ui/window.h"

namespace mpa::ui {

namespace {

// Frames rendered before a screenshot once the view is settled: ImGui sizes auto-fit windows and table
// columns over the first frames, and the selection made by --select scrolls the table one frame later.
constexpr int kScreenshotFrames = 4;
// How long a screenshot or bench waits for the graph layout before giving up.
constexpr double kLayoutTimeoutSeconds = 120;

// A report with its panels and what the user picked; replaced whole when another report opens (a running
// audit's snapshots replace only the model: the panels keep their state).
struct Session {
  std::unique_ptr<ReportModel> model;
  DashboardSelection selection;
  HeaderPanel header;
  AlertsPanel alerts;
  DivergencePlotPanel divergence_plot;
  NodeTablePanel node_table;
  NodeInspectorPanel inspector;
  GraphPanel graph;
  ReportCardPanel card;
  HistogramsPanel histograms;
  WhatIfPanel what_if;
  FixPanel fix;
};

std::unique_ptr<Session> open_session(std::unique_ptr<ReportModel> model_to_show, const DashboardOptions& options) {
  auto session = std::make_unique<Session>();
  session->model = std::move(model_to_show);
  const ReportModel& model = *session->model;
  DashboardSelection& selection = session->selection;
  selection.target = model.fix()               ? model.fix()->target
                     : model.targets().empty() ? std::string()
                                               : model.targets().front();
  if (!selection.target.empty()) selection.select_node(model.target_view(selection.target).unsafe.first_node);
  // With a fix report, its first kept node: what its before/after figures are about.
  if (model.fix() && !model.fix()->keep.empty())
    selection.select_node(model.node_index(model.fix()->keep.front().node));
  session->graph.metric = options.graph_metric;
  session->graph.expand_all_at_start = options.expand_all;
  session->graph.fit_all_at_start = options.fit_graph;
  return session;
}

// --select and --filter, on the first report shown.
void apply_start_options(Session& session, const DashboardOptions& options) {
  if (!options.selected_node.empty()) {
    const int index = session.model->node_index(options.selected_node);
    require(index >= 0, options.report_path + ": no node named '" + options.selected_node + "'");
    session.selection.select_node(index);
  }
  options.node_filter.copy(session.node_table.filter_text, sizeof session.node_table.filter_text - 1);
}

// [SECTION] Views

// Where a panel sits, as fractions of the area below the menu bar.
struct PanelPlace {
  float x, y, width, height;
};

void place_next_window(const PanelPlace& place, ImGuiCond condition) {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const float top = ImGui::GetFrameHeight();  // the main menu bar
  const float height = display.y - top;
  ImGui::SetNextWindowPos(ImVec2(place.x * display.x, top + place.y * height), condition);
  ImGui::SetNextWindowSize(ImVec2(place.width * display.x, place.height * height), condition);
}

constexpr float kHeaderHeight = 0.11f;
constexpr float kWhatIfHeight = 0.28f;  // what-if mode: the What-if panel's share below the inspector or card

// The inspector down the right of the window from `left`; in what-if mode the What-if panel below it.
void draw_inspector_column(float left, Session& s, ImGuiCond condition) {
  const float what_if = s.selection.pins ? kWhatIfHeight : 0;
  place_next_window({left, kHeaderHeight, 1 - left, 1 - kHeaderHeight - what_if}, condition);
  s.inspector.Draw(*s.model, s.selection, nullptr);
  if (!s.selection.pins) return;
  place_next_window({left, 1 - what_if, 1 - left, what_if}, condition);
  s.what_if.Draw(*s.model, s.selection, nullptr);
}

// The header across the top, `main` in the left `left_width` of the window, the inspector beside it.
template <class Panel>
void draw_beside_inspector(Panel& main, float left_width, Session& s, ImGuiCond condition) {
  place_next_window({0, 0, 1, kHeaderHeight}, condition);
  s.header.Draw(*s.model, s.selection, nullptr);
  place_next_window({0, kHeaderHeight, left_width, 1 - kHeaderHeight}, condition);
  main.Draw(*s.model, s.selection, nullptr);
  draw_inspector_column(left_width, s, condition);
}

// Draws the panels of one view. `condition` is FirstUseEver normally (windows stay where the user put
// them) and Always on the frame after a switch, so each view opens in its own arrangement.
void draw_view(DashboardView view, Session& s, ImGuiCond condition) {
  const ReportModel& model = *s.model;
  DashboardSelection& selection = s.selection;
  constexpr float kHeader = kHeaderHeight;
  switch (view) {
    case DashboardView::Table: {
      // Header across the top; alerts, divergence plot and node table down the left; inspector right.
      // With a fix report, the fix's summary takes the place of the alerts and the plot, the table the rest.
      constexpr float kAlerts = 0.15f, kPlot = 0.32f, kLeft = 0.60f;
      place_next_window({0, 0, 1, kHeader}, condition);
      s.header.Draw(model, selection, nullptr);
      if (model.fix()) {
        constexpr float kFix = 0.30f;
        place_next_window({0, kHeader, kLeft, kFix}, condition);
        s.fix.Draw(model, selection, nullptr);
        place_next_window({0, kHeader + kFix, kLeft, 1 - kHeader - kFix}, condition);
        s.node_table.Draw(model, selection, nullptr);
      } else {
        place_next_window({0, kHeader, kLeft, kAlerts}, condition);
        s.alerts.Draw(model, selection, nullptr);
        place_next_window({0, kHeader + kAlerts, kLeft, kPlot}, condition);
        s.divergence_plot.Draw(model, selection, nullptr);
        place_next_window({0, kHeader + kAlerts + kPlot, kLeft, 1 - kHeader - kAlerts - kPlot}, condition);
        s.node_table.Draw(model, selection, nullptr);
      }
      draw_inspector_column(kLeft, s, condition);
      break;
    }
    case DashboardView::Graph: return draw_beside_inspector(s.graph, 0.64f, s, condition);
    case DashboardView::Inspector: return draw_beside_inspector(s.node_table, 0.42f, s, condition);
    case DashboardView::Histograms: return draw_beside_inspector(s.histograms, 0.58f, s, condition);
    case DashboardView::Card: {
      const float what_if = selection.pins ? kWhatIfHeight : 0;
      place_next_window({0, 0, 1, 1 - what_if}, condition);
      s.card.Draw(model, selection, nullptr);
      if (!selection.pins) break;
      place_next_window({0, 1 - what_if, 1, what_if}, condition);
      s.what_if.Draw(model, selection, nullptr);
      break;
    }
  }
}

// [SECTION] Saved state: ImGui keeps window places and table columns in imgui.ini; our own entry adds the
// view they belong to, so the next run opens that view with that arrangement.

struct SavedState {
  std::optional<DashboardView> view;  // read from imgui.ini
  DashboardView* current = nullptr;   // written to it
};

void* saved_state_open(ImGuiContext*, ImGuiSettingsHandler* handler, const char* name) {
  return std::strcmp(name, "State") == 0 ? handler->UserData : nullptr;
}

void saved_state_read_line(ImGuiContext*, ImGuiSettingsHandler*, void* entry, const char* line) {
  char name[32];
  if (std::sscanf(line, "View=%31s", name) == 1) static_cast<SavedState*>(entry)->view = parse_view(name);
}

void saved_state_write(ImGuiContext*, ImGuiSettingsHandler* handler, ImGuiTextBuffer* out) {
  const SavedState& state = *static_cast<SavedState*>(handler->UserData);
  out->appendf("[%s][State]\nView=%s\n\n", handler->TypeName, view_name(*state.current));
}

void register_saved_state(SavedState& state) {
  ImGuiSettingsHandler handler;
  handler.TypeName = "mpaudit";
  handler.TypeHash = ImHashStr("mpaudit");
  handler.ReadOpenFn = saved_state_open;
  handler.ReadLineFn = saved_state_read_line;
  handler.WriteAllFn = saved_state_write;
  handler.UserData = &state;
  ImGui::GetCurrentContext()->SettingsHandlers.push_back(handler);
}

// [SECTION] Files

void write_node_data(const ReportModel& model, const std::string& target, GraphMetric metric,
                     const std::string& graph_id, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  require(static_cast<bool>(out), path + ": cannot open for writing");
  out << model_explorer_node_data(model, target, metric, graph_id).dump(1) << "\n";
  require(static_cast<bool>(out), path + ": cannot write");
}

// Ctrl+C or a kill from the terminal ends the loop like closing the window, so the cleanup runs and
// imgui.ini keeps the layout.
volatile std::sig_atomic_t stop_requested = 0;
void request_stop(int) { stop_requested = 1; }

// Drag and drop: GLFW hands over paths in a callback; the frame loop opens the last one.
std::string dropped_path;
void remember_drop(GLFWwindow*, int count, const char** paths) {
  if (count > 0) dropped_path = paths[count - 1];
}

// The File > Open popup: a path box and the folder's reports (and sub-folders) to click.
struct OpenDialog {
  char path[1024] = "";
  std::string error;
  bool request = false;

  // Returns the path to open when the user confirms one.
  std::optional<std::string> Draw() {
    if (request) {
      request = false;
      error.clear();
      ImGui::OpenPopup("Open report");
    }
    std::optional<std::string> chosen;
    ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 40, ImGui::GetFontSize() * 24), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal("Open report")) return chosen;
    ImGui::SetNextItemWidth(-1);
    if (ImGui::InputText("##path", path, sizeof path, ImGuiInputTextFlags_EnterReturnsTrue)) chosen = path;
    std::error_code ec;
    std::filesystem::path folder(path);
    if (!std::filesystem::is_directory(folder, ec)) folder = folder.parent_path();
    if (folder.empty()) folder = ".";
    ImGui::BeginChild("files", ImVec2(0, -ImGui::GetFrameHeightWithSpacing() * (error.empty() ? 1.2f : 2.2f)), true);
    std::vector<std::filesystem::directory_entry> entries;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
      const bool dir = it->is_directory(ec);
      if (dir || it->path().extension() == ".json") entries.push_back(*it);
    }
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
    if (ImGui::Selectable("../"))
      std::snprintf(path, sizeof path, "%s", std::filesystem::absolute(folder / "..", ec).lexically_normal().c_str());
    for (const auto& entry : entries) {
      const bool dir = entry.is_directory(ec);
      const std::string label = entry.path().filename().string() + (dir ? "/" : "");
      if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_AllowDoubleClick)) {
        std::snprintf(path, sizeof path, "%s", (entry.path().string() + (dir ? "/" : "")).c_str());
        if (!dir && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) chosen = path;
      }
    }
    ImGui::EndChild();
    if (!error.empty()) ImGui::TextColored(verdict_color(report::Verdict::Unsafe), "%s", error.c_str());
    if (ImGui::Button("Open")) chosen = path;
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
    if (chosen) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
    return chosen;
  }
};

// `view MODEL.onnx`: the audit's worker, the nodes pinned to FP32 and the last finished run's summary.
// Each frame takes the audit's newest report into the session (the first opens it; later ones replace only
// its model, since the graph is the same and the panels keep their state) and re-runs the audit when a
// panel changed the pins.
struct AuditInWindow {
  LiveAudit audit;
  PinSet pins;
  int pins_audited;
  std::optional<std::map<std::string, report::TargetSummary>> finished_summary;  // for before -> after
  bool showing_final = false;  // the last run's final report is on screen

  explicit AuditInWindow(const DashboardOptions& options)
      : audit(options.audit), pins(options.keep_fp32), pins_audited(pins.version()) {
    audit.start(options.keep_fp32);
  }

  // True when a newer report is on screen (the view settles again). Fails (mpa::Error) when --select
  // names no node of the first report.
  bool update(std::unique_ptr<Session>& session, const DashboardOptions& options) {
    std::optional<AuditSnapshot> snapshot = audit.take_snapshot();
    if (snapshot) {
      showing_final = snapshot->is_final();
      std::vector<std::string> changes;
      if (showing_final) {
        if (finished_summary) changes = what_if_changes(*finished_summary, snapshot->report.summary);
        finished_summary = snapshot->report.summary;
      }
      auto model =
          std::make_unique<ReportModel>(std::move(snapshot->report), options.report_path, snapshot->node_runs_done);
      if (session) {
        session->model = std::move(model);
      } else {
        session = open_session(std::move(model), options);
        session->selection.pins = &pins;
        apply_start_options(*session, options);
      }
      DashboardSelection& selection = session->selection;
      if (showing_final && selection.node < 0 && !selection.target.empty())
        selection.select_node(session->model->target_view(selection.target).unsafe.first_node);
      if (showing_final) session->what_if.changes = std::move(changes);
    }
    if (session && pins.version() != pins_audited) {
      pins_audited = pins.version();
      showing_final = false;
      audit.start(pins.names(*session->model));
    }
    if (session) session->what_if.status = audit.status();
    return snapshot.has_value();
  }
};

// CPU time of the whole process, every thread (a software OpenGL's rasteriser threads too), in ms: unlike
// wall time, hardly moved by other processes on the machine.
double process_cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto ms = [](const timeval& t) {
    return 1e3 * static_cast<double>(t.tv_sec) + 1e-3 * static_cast<double>(t.tv_usec);
  };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double percentile_of(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Setup 2: a window with an OpenGL 3.3 core context (ui/window.h), taking dropped reports.
GLFWwindow* open_dashboard_window(const DashboardOptions& options, bool headless, const std::string& title) {
  GLFWwindow* window = open_window(options.width, options.height, headless, title);
  glfwSetDropCallback(window, remember_drop);
  return window;
}

// Setup 3: Dear ImGui with its GLFW and OpenGL3 backends. Interactive runs keep window places (and the
// view, in `saved`) in the user's config folder at `ini_path`; headless runs keep nothing, so every
// screenshot is the same.
void setup_imgui(GLFWwindow* window, const DashboardOptions& options, bool headless, SavedState& saved,
                 std::string& ini_path) {
  start_imgui(window, options.font_scale, headless);
  ImGuiIO& io = ImGui::GetIO();
  if (!headless) {
    if (const auto file = settings_file(std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME"))) {
      std::error_code ec;
      std::filesystem::create_directories(file->parent_path(), ec);
      if (!ec) {
        ini_path = file->string();
        io.IniFilename = ini_path.c_str();
        register_saved_state(saved);
      }
    }
  }
}

// The menu bar: files, then one item per view (F1..F5), the audit's progress, the last file action.
void menu_bar(GLFWwindow* window, Session* s, const DashboardOptions& options, const AuditStatus& audit_status,
              OpenDialog& open_dialog, std::string& status, bool& save_png, DashboardView& view) {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open report...", "Ctrl+O")) open_dialog.request = true;
    if (ImGui::MenuItem("Export node data for Model Explorer", nullptr, false, s && !s->selection.target.empty())) {
      const std::string out = std::filesystem::path(s->model->path()).replace_extension().string() + "." +
                              s->selection.target + ".node_data.json";
      try {
        write_node_data(*s->model, s->selection.target, s->graph.metric, options.graph_id, out);
        status = "wrote " + out + " (" + metric_name(s->graph.metric) + ")";
      } catch (const Error& e) {
        status = e.what();
      }
    }
    if (ImGui::MenuItem("Save PNG of this view")) save_png = true;
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) glfwSetWindowShouldClose(window, GLFW_TRUE);
    ImGui::EndMenu();
  }
  ImGui::Separator();
  for (size_t i = 0; i < std::size(kDashboardViews); ++i) {
    const std::string shortcut = "F" + std::to_string(i + 1);
    if (ImGui::MenuItem(view_name(kDashboardViews[i]), shortcut.c_str(), view == kDashboardViews[i]))
      view = kDashboardViews[i];
  }
  ImGui::Separator();
  if (audit_status.running) {
    audit_progress(audit_status, ImGui::GetFontSize() * 26);
    ImGui::Separator();
  } else if (!audit_status.error.empty()) {
    ImGui::TextColored(verdict_color(report::Verdict::Unsafe), "audit failed: %s", audit_status.error.c_str());
    ImGui::Separator();
  }
  ImGui::TextDisabled("%s", !status.empty() ? status.c_str()
                            : s             ? s->model->path().c_str()
                                            : options.report_path.c_str());
  ImGui::EndMainMenuBar();
}

// The view's panels once a report is on screen; before the audit's first report, what it is doing or why it
// failed. A panel's request to show nodes in the table (a graph group's) switches to the inspector view.
void draw_body(Session* s, const DashboardOptions& options, const AuditStatus& audit_status, DashboardView& view,
               bool& relayout) {
  if (s) {
    draw_view(view, *s, relayout ? ImGuiCond_Always : ImGuiCond_FirstUseEver);
    relayout = false;
  } else {
    // Before the audit's first report: what it is doing, or why it failed.
    place_next_window({0.2f, 0.35f, 0.6f, 0.15f}, ImGuiCond_Always);
    ImGui::Begin("Audit", nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoCollapse);
    ImGui::TextUnformatted(options.report_path.c_str());
    if (!audit_status.error.empty())
      ImGui::TextColored(verdict_color(report::Verdict::Unsafe), "audit failed: %s", audit_status.error.c_str());
    else
      ImGui::TextDisabled("loading the model and its inputs ...");
    ImGui::End();
  }
  if (s && !s->selection.table_filter_request.empty()) {
    // E.g. a group's nodes from the graph: the table beside the inspector, filtered to them.
    std::snprintf(s->node_table.filter_text, sizeof s->node_table.filter_text, "%s",
                  s->selection.table_filter_request.c_str());
    s->node_table.rows_dirty = true;
    s->selection.table_filter_request.clear();
    relayout = view != DashboardView::Inspector;
    view = DashboardView::Inspector;
  }
}

// Frame times of a --bench-frames run, and what it prints of them.
struct FrameTimes {
  std::vector<double> frame_ms, build_frame_ms, layout_frame_ms;
  double bench_cpu_start_ms = 0;  // process CPU time when the first timed frame started

  void print(DashboardView view, int node_count, const DashboardOptions& options, int layout_items,
             double layout_ms) const {
    const double cpu_per_frame_ms =
        frame_ms.empty() ? 0 : (process_cpu_ms() - bench_cpu_start_ms) / static_cast<double>(frame_ms.size());
    std::printf("frames: view=%s nodes=%d window=%dx%d frames=%zu median_ms=%.2f p95_ms=%.2f max_ms=%.2f\n",
                view_name(view), node_count, options.width, options.height, frame_ms.size(), median_of(frame_ms),
                percentile_of(frame_ms, 0.95),
                frame_ms.empty() ? 0 : *std::max_element(frame_ms.begin(), frame_ms.end()));
    std::printf("cpu per frame (all threads, the software renderer's included): mean_ms=%.2f\n", cpu_per_frame_ms);
    std::printf("ui build (events + panels + ImGui::Render, no GL): median_ms=%.2f p95_ms=%.2f max_ms=%.2f\n",
                median_of(build_frame_ms), percentile_of(build_frame_ms, 0.95),
                build_frame_ms.empty() ? 0 : *std::max_element(build_frame_ms.begin(), build_frame_ms.end()));
    std::printf("frames while laying out: %zu, median_ms=%.2f max_ms=%.2f\n", layout_frame_ms.size(),
                median_of(layout_frame_ms),
                layout_frame_ms.empty() ? 0 : *std::max_element(layout_frame_ms.begin(), layout_frame_ms.end()));
    if (layout_items > 0) std::printf("graph layout: %d items in %.1f ms (worker thread)\n", layout_items, layout_ms);
  }
};

}  // namespace

// [SECTION] run_dashboard

int run_dashboard(const DashboardOptions& options) {
  // Setup 1: a report is read before any window opens, so a bad file fails fast and headless; a model is
  // audited on a worker thread once the window is up (or right here when only node data is asked for).
  if (!options.export_node_data.empty()) {
    const std::atomic<bool> never_cancelled{false};
    const ReportModel model(options.audit ? options.audit(options.keep_fp32, {}, never_cancelled)
                                          : report::read_report(options.report_path),
                            options.report_path);
    require(!model.targets().empty(), options.report_path + ": the report has no target format");
    write_node_data(model, model.targets().front(), options.graph_metric, options.graph_id, options.export_node_data);
    return 0;
  }
  std::unique_ptr<Session> session;
  if (!options.audit) {
    auto model = std::make_unique<ReportModel>(report::read_report(options.report_path), options.report_path);
    if (!options.fix_path.empty()) model->attach_fix(report::read_fix_report(options.fix_path), options.fix_path);
    session = open_session(std::move(model), options);
    apply_start_options(*session, options);
  }
  const bool headless = !options.screenshot_path.empty() || options.bench_frames > 0;

  std::string title = "mpaudit - " + options.report_path;
  GLFWwindow* window = open_dashboard_window(options, headless, title);

  DashboardView view = options.view;
  SavedState saved{std::nullopt, &view};
  std::string ini_path;
  setup_imgui(window, options, headless, saved, ini_path);

  // Setup 4: the model's audit on its worker thread, with the nodes pinned at start.
  std::unique_ptr<AuditInWindow> live;
  if (options.audit) live = std::make_unique<AuditInWindow>(options);
  std::string fatal_error;  // ends the loop: a headless audit failed, or --select names no node

  // Loop: poll events, build the frame's view, render. A screenshot run renders until the view is settled
  // (the audit finished, the graph laid out) and then a few frames more, and reads the last one back before
  // it is swapped away; a bench run times bench_frames frames once settled.
  OpenDialog open_dialog;
  std::snprintf(open_dialog.path, sizeof open_dialog.path, "%s",
                std::filesystem::absolute(options.report_path).parent_path().string().c_str());
  std::string status;  // the last file action's outcome, shown in the menu bar
  bool relayout = false, save_png = false, done = false, screenshot_written = false;
  int settled_frames = 0;
  FrameTimes times;
  auto layout_wait_started = std::chrono::steady_clock::now();
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  for (int frame = 0; !glfwWindowShouldClose(window) && !done && !stop_requested; ++frame) {
    const auto frame_start = std::chrono::steady_clock::now();
    const double frame_cpu_start_ms = options.bench_frames > 0 ? process_cpu_ms() : 0;
    begin_frame();
    if (frame == 0 && saved.view) {
      // imgui.ini is read by the first NewFrame: its window places belong to the view saved with them.
      if (!options.view_given) view = *saved.view;
      relayout = view != *saved.view;
    }

    AuditStatus audit_status;
    if (live) {
      try {
        if (live->update(session, options)) {
          settled_frames = 0;
          if (live->showing_final) layout_wait_started = std::chrono::steady_clock::now();
        }
      } catch (const Error& e) {
        fatal_error = e.what();
      }
      audit_status = live->audit.status();
      if (headless && !audit_status.running && !audit_status.error.empty()) fatal_error = audit_status.error;
    }
    Session* s = session.get();
    if (s) s->selection.begin_frame();

    const DashboardView before = view;
    menu_bar(window, s, options, audit_status, open_dialog, status, save_png, view);
    const ImGuiIO& io = ImGui::GetIO();
    if (!io.WantTextInput) {
      for (size_t i = 0; i < std::size(kDashboardViews); ++i)
        if (ImGui::IsKeyPressed(GLFW_KEY_F1 + static_cast<int>(i), false)) view = kDashboardViews[i];
    }
    if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_O, false)) open_dialog.request = true;
    if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_Q, false)) glfwSetWindowShouldClose(window, GLFW_TRUE);
    relayout = relayout || view != before;

    draw_body(s, options, audit_status, view, relayout);

    // Another report: from the Open popup or dropped on the window. A report that fails to load leaves the
    // current one on screen and says why; one that loads ends the audit.
    std::optional<std::string> to_open = open_dialog.Draw();
    if (!dropped_path.empty()) to_open = std::exchange(dropped_path, std::string());
    if (to_open) {
      try {
        std::unique_ptr<Session> opened =
            open_session(std::make_unique<ReportModel>(report::read_report(*to_open), *to_open), options);
        live.reset();
        session = std::move(opened);
        title = "mpaudit - " + *to_open;
        glfwSetWindowTitle(window, title.c_str());
        status = "opened " + *to_open;
      } catch (const std::exception& e) {
        open_dialog.error = e.what();
        status = e.what();
      }
    }

    ImGui::Render();
    const double build_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count();
    draw_frame(window);
    if (save_png) {
      save_png = false;
      const std::string out = std::string("mpaudit-") + view_name(view) + ".png";
      status = save_framebuffer_png(window, out) ? "saved " + out : out + ": cannot write";
    }

    // Headless runs: wait for the audit, then for the graph layout (frames keep coming meanwhile), then
    // shoot or time.
    if (!fatal_error.empty()) break;
    const bool audited = !live || live->showing_final;
    const bool settled = audited && (view != DashboardView::Graph || !session->graph.layout_pending());
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - layout_wait_started).count();
    if (headless && !audited) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the CPU is the audit's
    if (headless && audited && !settled) {
      if (waited > kLayoutTimeoutSeconds) break;
      if (options.bench_frames == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a bench times these frames
    }
    if (settled) ++settled_frames;
    if (!options.screenshot_path.empty() && settled && settled_frames >= kScreenshotFrames) {
      screenshot_written = save_framebuffer_png(window, options.screenshot_path);
      done = true;
    }
    glfwSwapBuffers(window);
    if (options.bench_frames > 0) {
      glFinish();  // count the (software) renderer's work in the frame it belongs to
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count();
      if (audited && !settled)
        times.layout_frame_ms.push_back(ms);
      else if (settled && settled_frames > kScreenshotFrames) {  // after the first frames' sizing
        if (times.frame_ms.empty()) times.bench_cpu_start_ms = frame_cpu_start_ms;
        times.frame_ms.push_back(ms);
        times.build_frame_ms.push_back(build_ms);
      }
      done = static_cast<int>(times.frame_ms.size()) >= options.bench_frames;
    }
  }

  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  // Cleanup: the audit (cancelled: it stops after the node it is running), the report's panels (the layout
  // worker), backends, ImGui context (which writes imgui.ini), window, GLFW, in the reverse order of setup.
  live.reset();
  const int node_count = session ? session->model->node_count() : 0;
  const auto [layout_items, layout_ms] = session ? session->graph.last_layout() : std::pair<int, double>{0, 0};
  session.reset();
  close_window(window);
  if (!fatal_error.empty()) fail(fatal_error);
  if (headless)
    require(done, "the graph layout did not finish within " + std::to_string(int(kLayoutTimeoutSeconds)) + " s");
  require(options.screenshot_path.empty() || screenshot_written,
          options.screenshot_path + ": cannot write the screenshot");
  if (options.bench_frames > 0) times.print(view, node_count, options, layout_items, layout_ms);
  return 0;
}

}  // namespace mpa::ui
