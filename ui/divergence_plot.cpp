// Divergence along depth: isolated SQNR (the error a node introduces) and propagated SQNR (the error the
// deployed model carries) per node in execution order, drawn with ImDrawList so that thresholds, verdict
// markers, hover and click all live on one canvas.
#include <algorithm>

#include "ui/panels.h"

namespace mpa::ui {

namespace {

// The display range of SQNR: 0 dB (error as large as the signal) to 120 dB (beyond any format's
// precision; exact results, capped at 400 in the report, sit on the top edge).
constexpr double kPlotMinDb = 0, kPlotMaxDb = 120;
const ImU32 kIsolatedColor = IM_COL32(90, 170, 250, 255);
const ImU32 kPropagatedColor = IM_COL32(240, 200, 90, 255);
const ImU32 kGridColor = IM_COL32(255, 255, 255, 28);

// A node's SQNR on screen: a node whose output turned NaN/Inf everywhere has no SQNR, and is drawn at
// 0 dB, the worst; a node with nothing measured (integer outputs) is not drawn.
double displayed_db(double sqnr_db, int64_t nonfinite) {
  if (std::isnan(sqnr_db)) return nonfinite > 0 ? kPlotMinDb : std::nan("");
  return std::clamp(sqnr_db, kPlotMinDb, kPlotMaxDb);
}

struct PlotFrame {
  ImVec2 min, max;
  int node_count;
  float x_of(int node) const {
    const float span = static_cast<float>(std::max(node_count - 1, 1));
    return min.x + (max.x - min.x) * static_cast<float>(node) / span;
  }
  float y_of(double db) const {
    return max.y - (max.y - min.y) * static_cast<float>((db - kPlotMinDb) / (kPlotMaxDb - kPlotMinDb));
  }
  int node_at(float x) const {
    const float t = (x - min.x) / std::max(max.x - min.x, 1.0f);
    return std::clamp(static_cast<int>(std::lround(t * static_cast<float>(std::max(node_count - 1, 1)))), 0,
                      node_count - 1);
  }
};

// One series as a polyline broken where a node has no value, with a dot per node where nodes are at least
// a few pixels apart (thousands of dots would merge into the line and cost most of the frame).
// With more nodes than pixel columns, each column shows the range of its nodes' values as one vertical bar
// instead (the same picture, a few hundred rectangles instead of thousands of line segments), and
// neighbouring columns with the same pixel range share one rectangle.
void draw_series(ImDrawList* draw, const PlotFrame& frame, const std::vector<double>& values, ImU32 color) {
  const int columns = std::max(1, static_cast<int>(frame.max.x - frame.min.x));
  if (static_cast<int>(values.size()) > 2 * columns) {
    std::vector<double> low(static_cast<size_t>(columns), NAN), high(static_cast<size_t>(columns), NAN);
    for (int i = 0; i < static_cast<int>(values.size()); ++i) {
      const double v = values[static_cast<size_t>(i)];
      if (std::isnan(v)) continue;
      const size_t c = static_cast<size_t>(std::clamp(static_cast<int>(frame.x_of(i) - frame.min.x), 0, columns - 1));
      low[c] = std::isnan(low[c]) ? v : std::min(low[c], v);
      high[c] = std::isnan(high[c]) ? v : std::max(high[c], v);
    }
    // Each column's bar in whole pixel rows (top, bottom); {0, 0} where the column has no value.
    std::vector<std::pair<int, int>> bars(static_cast<size_t>(columns), {0, 0});
    for (size_t c = 0; c < bars.size(); ++c)
      if (!std::isnan(low[c]))
        bars[c] = {static_cast<int>(std::floor(frame.y_of(high[c]) - 1)),
                   static_cast<int>(std::ceil(frame.y_of(low[c]) + 1))};
    for (int c = 0, end = 0; c < columns; c = end) {
      const std::pair<int, int> bar = bars[static_cast<size_t>(c)];
      for (end = c + 1; end < columns && bars[static_cast<size_t>(end)] == bar;) ++end;
      if (bar.first == bar.second) continue;
      draw->AddRectFilled(ImVec2(frame.min.x + static_cast<float>(c), static_cast<float>(bar.first)),
                          ImVec2(frame.min.x + static_cast<float>(end), static_cast<float>(bar.second)), color);
    }
    return;
  }
  const bool dots = values.size() < 2 || frame.x_of(1) - frame.x_of(0) >= 4;
  std::vector<ImVec2> run;
  const auto flush = [&] {
    if (run.size() > 1) draw->AddPolyline(run.data(), static_cast<int>(run.size()), color, ImDrawFlags_None, 1.5f);
    run.clear();
  };
  for (int i = 0; i < static_cast<int>(values.size()); ++i) {
    const double v = values[static_cast<size_t>(i)];
    if (std::isnan(v)) {
      flush();
      continue;
    }
    const ImVec2 point(frame.x_of(i), frame.y_of(v));
    run.push_back(point);
    if (dots) draw->AddCircleFilled(point, 2.5f, color);
  }
  flush();
}

void threshold_line(ImDrawList* draw, const PlotFrame& frame, double db, ImU32 color, const char* label) {
  if (std::isnan(db)) return;
  const float y = frame.y_of(db);
  draw->AddLine(ImVec2(frame.min.x, y), ImVec2(frame.max.x, y), color, 1.0f);
  const std::string text = std::string(label) + " " + format_number(db, "%.0f dB");
  draw->AddText(ImVec2(frame.max.x - ImGui::CalcTextSize(text.c_str()).x - 4, y - ImGui::GetTextLineHeight()), color,
                text.c_str());
}

double threshold_for(const std::map<std::string, double>& by_format, const std::string& target) {
  const auto it = by_format.find(target);
  return it == by_format.end() ? std::nan("") : it->second;
}

}  // namespace

void DivergencePlotPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Divergence along depth", open)) return ImGui::End();
  if (selection.target.empty() || model.node_count() == 0) return ImGui::End();
  const TargetView& view = model.target_view(selection.target);
  // The checkbox labels in their series' colours double as the legend.
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(kIsolatedColor));
  ImGui::Checkbox("isolated SQNR", &show_isolated);
  ImGui::PopStyleColor();
  ImGui::SameLine();
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(kPropagatedColor));
  ImGui::Checkbox("propagated SQNR", &show_propagated);
  ImGui::PopStyleColor();
  ImGui::SameLine();
  ImGui::TextDisabled("(dB, min over a node's outputs, shown 0..120; red: unsafe node)");

  // The canvas: an invisible button claims the area so hover and click belong to this panel.
  const float axis_width = ImGui::CalcTextSize("120").x + 8;
  const float axis_height = ImGui::GetTextLineHeightWithSpacing();
  ImVec2 canvas_min = ImGui::GetCursorScreenPos();
  ImVec2 canvas_size = ImGui::GetContentRegionAvail();
  canvas_size.x = std::max(canvas_size.x, 100.0f);
  canvas_size.y = std::max(canvas_size.y, 80.0f);
  ImGui::InvisibleButton("plot", canvas_size);
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  PlotFrame frame{ImVec2(canvas_min.x + axis_width, canvas_min.y + 4),
                  ImVec2(canvas_min.x + canvas_size.x - 8, canvas_min.y + canvas_size.y - axis_height),
                  model.node_count()};
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(frame.min, frame.max, IM_COL32(20, 20, 26, 255));

  // Grid and axis labels every 20 dB; node indices along the bottom.
  for (double db = kPlotMinDb; db <= kPlotMaxDb; db += 20) {
    const float y = frame.y_of(db);
    draw->AddLine(ImVec2(frame.min.x, y), ImVec2(frame.max.x, y), kGridColor);
    const std::string label = format_number(db, "%.0f");
    draw->AddText(ImVec2(canvas_min.x, y - ImGui::GetTextLineHeight() / 2), IM_COL32(160, 160, 160, 255), label.c_str());
  }
  const int label_step = std::max(1, model.node_count() / 10);
  for (int i = 0; i < model.node_count(); i += label_step)
    draw->AddText(ImVec2(frame.x_of(i) - 3, frame.max.y + 2), IM_COL32(160, 160, 160, 255), std::to_string(i).c_str());

  // Warn and unsafe nodes as columns behind the series, each pixel column in the worst verdict that falls on
  // it, a run of one verdict as one rectangle: where such nodes are dense, a few rectangles instead of
  // hundreds of overlapping ones (thin translucent shapes are what a software rasteriser spends its time on).
  // The selected node as a white line.
  const float half_column = std::max(2.0f, (frame.max.x - frame.min.x) / static_cast<float>(model.node_count()) / 2);
  const int columns = std::max(1, static_cast<int>(frame.max.x - frame.min.x));
  std::vector<int> worst(static_cast<size_t>(columns), -1);  // a verdict's value; -1: no warn or unsafe node
  for (int i = 0; i < model.node_count(); ++i) {
    const NodeFigures& f = view.nodes[static_cast<size_t>(i)];
    if (f.unmeasured() || f.verdict == report::Verdict::Safe) continue;
    const float centre = frame.x_of(i) - frame.min.x;
    const int left = std::clamp(static_cast<int>(std::floor(centre - half_column)), 0, columns);
    const int right = std::clamp(static_cast<int>(std::ceil(centre + half_column)), 0, columns);
    for (int c = left; c < right; ++c)
      worst[static_cast<size_t>(c)] = std::max(worst[static_cast<size_t>(c)], static_cast<int>(f.verdict));
  }
  for (int c = 0, end = 0; c < columns; c = end) {
    const int verdict = worst[static_cast<size_t>(c)];
    for (end = c + 1; end < columns && worst[static_cast<size_t>(end)] == verdict;) ++end;
    if (verdict < 0) continue;
    const ImVec4 color = verdict_color(static_cast<report::Verdict>(verdict));
    draw->AddRectFilled(ImVec2(frame.min.x + static_cast<float>(c), frame.min.y),
                        ImVec2(frame.min.x + static_cast<float>(end), frame.max.y),
                        ImGui::GetColorU32(ImVec4(color.x, color.y, color.z, 0.25f)));
  }
  if (selection.node >= 0)
    draw->AddLine(ImVec2(frame.x_of(selection.node), frame.min.y), ImVec2(frame.x_of(selection.node), frame.max.y),
                  IM_COL32(255, 255, 255, 160), 2.0f);

  const report::Thresholds& thresholds = model.report().config.thresholds;
  threshold_line(draw, frame, threshold_for(thresholds.sqnr_warn_db, selection.target),
                 ImGui::GetColorU32(verdict_color(report::Verdict::Warn)), "warn");
  threshold_line(draw, frame, threshold_for(thresholds.sqnr_unsafe_db, selection.target),
                 ImGui::GetColorU32(verdict_color(report::Verdict::Unsafe)), "unsafe");

  std::vector<double> isolated, propagated;
  for (const NodeFigures& f : view.nodes) {
    isolated.push_back(displayed_db(f.isolated_sqnr_db, f.isolated_nonfinite));
    propagated.push_back(displayed_db(f.propagated_sqnr_db, f.propagated_nonfinite));
  }
  draw->PushClipRect(frame.min, frame.max, true);
  if (show_propagated) draw_series(draw, frame, propagated, kPropagatedColor);
  if (show_isolated) draw_series(draw, frame, isolated, kIsolatedColor);
  draw->PopClipRect();

  // Hover: the nearest node's figures; click selects it.
  if (hovered) {
    const int node = frame.node_at(ImGui::GetIO().MousePos.x);
    const NodeFigures& f = view.nodes[static_cast<size_t>(node)];
    draw->AddLine(ImVec2(frame.x_of(node), frame.min.y), ImVec2(frame.x_of(node), frame.max.y),
                  IM_COL32(255, 255, 255, 60));
    ImGui::BeginTooltip();
    ImGui::Text("#%d %s (%s)", node, model.node(node).name.c_str(), model.node(node).op_type.c_str());
    verdict_badge(f);
    ImGui::Text("isolated SQNR   %s dB%s", format_sqnr(f.isolated_sqnr_db).c_str(),
                f.isolated_nonfinite ? (", " + std::to_string(f.isolated_nonfinite) + " NaN/Inf").c_str() : "");
    ImGui::Text("propagated SQNR %s dB%s", format_sqnr(f.propagated_sqnr_db).c_str(),
                f.propagated_nonfinite ? (", " + std::to_string(f.propagated_nonfinite) + " NaN/Inf").c_str() : "");
    ImGui::EndTooltip();
    if (clicked) selection.select_node(node);
  }
  ImGui::End();
}

}  // namespace mpa::ui
