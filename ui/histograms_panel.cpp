// Histograms along depth: one row per node in execution order, one column per ExpHistogram bin (zero,
// below 2^-40, each power of two, above 2^40, Inf, NaN), the cell's colour its count on a log scale, over
// the target format's zones. Where values leave the format's window shows as colour crossing a zone edge
// (TensorBoard's step x bin heat maps, with the format drawn in). Rows outside the scrolled region are not
// drawn, so 10,000 nodes scroll smoothly.
#include <algorithm>

#include "probes/exp_histogram.h"
#include "ui/panels.h"

namespace mpa::ui {

namespace {

using probes::ExpHistogram;

// A perceptually even dark-to-bright ramp (viridis' stops), readable without hue discrimination.
ImU32 ramp_color(float t) {
  static const float stops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::clamp(t, 0.0f, 1.0f) * 4;
  const int i = std::min(static_cast<int>(t), 3);
  const float f = t - static_cast<float>(i);
  const auto mix = [&](int c) { return static_cast<int>(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * f); };
  return IM_COL32(mix(0), mix(1), mix(2), 255);
}

// Where a bin sits on the log2 |x| axis (for the format's zones): the exponent bins at their power of two,
// the special bins outside the axis.
double bin_log2(int bin) {
  if (bin == ExpHistogram::kZero || bin == ExpHistogram::kBelow) return -1e9;
  if (bin >= ExpHistogram::kAbove) return 1e9;
  return ExpHistogram::kMinExp + (bin - ExpHistogram::kFirstPow);
}

std::string bin_label(int bin) {
  if (bin == ExpHistogram::kZero) return "zero";
  if (bin == ExpHistogram::kBelow) return "|x| < 2^" + std::to_string(ExpHistogram::kMinExp);
  if (bin == ExpHistogram::kAbove) return "|x| >= 2^" + std::to_string(ExpHistogram::kMaxExp + 1);
  if (bin == ExpHistogram::kInf) return "Inf";
  if (bin == ExpHistogram::kNan) return "NaN";
  const int e = static_cast<int>(bin_log2(bin));
  return "2^" + std::to_string(e) + " <= |x| < 2^" + std::to_string(e + 1);
}

}  // namespace

void HistogramsPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Histograms along depth", open)) return ImGui::End();
  if (selection.target.empty() || model.node_count() == 0) return ImGui::End();
  ImGui::Checkbox("propagated run", &show_propagated);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the whole graph in the format, instead of the reference");
  ImGui::SameLine();
  ImGui::Checkbox("scale each row", &per_row_scale);
  ImGui::SameLine();
  ImGui::TextDisabled("(log counts of output values per power of two; bands: flush to 0, subnormal, normal, overflow in %s)",
                      selection.target.c_str());

  // Rows: each node's float outputs summed, for this target and run.
  const std::string key = selection.target + (show_propagated ? "/propagated" : "/reference");
  if (rows_key_ != key || rows_model_ != model.identity()) {
    rows_key_ = key;
    rows_model_ = model.identity();
    rows_.assign(static_cast<size_t>(model.node_count()), std::vector<int64_t>(ExpHistogram::kBins, 0));
    for (int node = 0; node < model.node_count(); ++node)
      for (const report::TensorStats& tensor : model.node(node).tensors) {
        if (!tensor.measured) continue;
        const ExpHistogram* hist = &tensor.hist;
        if (show_propagated) {
          const auto t = tensor.targets.find(selection.target);
          if (t == tensor.targets.end()) continue;
          hist = &t->second.propagated_hist;
        }
        for (int b = 0; b < ExpHistogram::kBins; ++b) rows_[static_cast<size_t>(node)][static_cast<size_t>(b)] += hist->counts[static_cast<size_t>(b)];
      }
  }
  int64_t global_max = 1;
  for (const std::vector<int64_t>& row : rows_) global_max = std::max(global_max, *std::max_element(row.begin(), row.end()));

  // Geometry: node labels on the left, one column per bin, the axis above the scrolling rows.
  const float label_width = ImGui::GetFontSize() * 16, row_height = ImGui::GetTextLineHeight() + 2;
  const float width = std::max(ImGui::GetContentRegionAvail().x, label_width + 200);
  const float column = (width - label_width - ImGui::GetStyle().ScrollbarSize) / ExpHistogram::kBins;
  const std::optional<Format> format = parse_format(selection.target);
  const auto zone_color = [&](int bin) -> ImU32 {
    if (bin == ExpHistogram::kInf || bin == ExpHistogram::kNan) return IM_COL32(235, 70, 60, 40);
    if (!format) return IM_COL32(60, 60, 70, 40);
    const FormatZones zones = format_zones(*format);
    const double log2 = bin_log2(bin) + 0.5;  // the bin's middle
    if (bin == ExpHistogram::kZero) return IM_COL32(60, 60, 70, 40);
    if (log2 < zones.flush_log2) return IM_COL32(120, 120, 140, 45);
    if (log2 < zones.normal_log2) return IM_COL32(160, 130, 220, 55);
    if (log2 <= zones.max_log2) return IM_COL32(80, 180, 100, 35);
    return IM_COL32(235, 70, 60, 60);
  };
  {
    const ImVec2 at = ImGui::GetCursorScreenPos();
    ImGui::Dummy(ImVec2(width, ImGui::GetTextLineHeightWithSpacing()));
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (int exponent = ExpHistogram::kMinExp; exponent < ExpHistogram::kMaxExp; exponent += 10) {
      const float x = at.x + label_width + column * static_cast<float>(ExpHistogram::kFirstPow + exponent - ExpHistogram::kMinExp);
      draw->AddText(ImVec2(x, at.y), IM_COL32(160, 160, 160, 255), ("2^" + std::to_string(exponent)).c_str());
    }
    draw->AddText(ImVec2(at.x + label_width, at.y), IM_COL32(160, 160, 160, 255), "0");
    draw->AddText(ImVec2(at.x + label_width + column * ExpHistogram::kInf, at.y), IM_COL32(160, 160, 160, 255), "inf nan");
  }

  ImGui::BeginChild("rows", ImVec2(0, 0), false);
  const int n = model.node_count();
  if (selection.node != last_selection_) {
    last_selection_ = selection.node;
    if (selection.node >= 0) {
      const float top = row_height * static_cast<float>(selection.node);
      if (top < ImGui::GetScrollY() || top > ImGui::GetScrollY() + ImGui::GetWindowHeight() - row_height)
        ImGui::SetScrollY(std::max(0.0f, top - ImGui::GetWindowHeight() / 2));
    }
  }
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("heat map", ImVec2(width - ImGui::GetStyle().ScrollbarSize, row_height * static_cast<float>(n)));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float scroll = ImGui::GetScrollY(), visible_height = ImGui::GetWindowHeight();
  const int first = std::max(0, static_cast<int>(scroll / row_height) - 1);
  const int last = std::min(n, static_cast<int>((scroll + visible_height) / row_height) + 2);
  const float map_x = origin.x + label_width;
  // Zone bands behind the visible rows.
  const float band_top = origin.y + row_height * static_cast<float>(first), band_bottom = origin.y + row_height * static_cast<float>(last);
  for (int b = 0; b < ExpHistogram::kBins; ++b)
    draw->AddRectFilled(ImVec2(map_x + column * static_cast<float>(b), band_top), ImVec2(map_x + column * static_cast<float>(b + 1), band_bottom),
                        zone_color(b));
  const TargetView& view = model.target_view(selection.target);
  for (int node = first; node < last; ++node) {
    const float y = origin.y + row_height * static_cast<float>(node);
    const std::vector<int64_t>& row = rows_[static_cast<size_t>(node)];
    const int64_t row_max = per_row_scale ? std::max<int64_t>(1, *std::max_element(row.begin(), row.end())) : global_max;
    const NodeFigures& figures = view.nodes[static_cast<size_t>(node)];
    const std::string label = std::to_string(node) + " " + model.node(node).name;
    const ImVec4 clip(origin.x, y, map_x - 4, y + row_height);
    const ImU32 label_color = figures.unmeasured() ? ImGui::GetColorU32(ImGuiCol_TextDisabled)
                              : figures.verdict == report::Verdict::Safe
                                  ? IM_COL32(200, 200, 200, 255)
                                  : ImGui::GetColorU32(verdict_color(figures.verdict));
    draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(origin.x, y + 1), label_color, label.c_str(), nullptr,
                  0, &clip);
    for (int b = 0; b < ExpHistogram::kBins; ++b) {
      const int64_t count = row[static_cast<size_t>(b)];
      if (count == 0) continue;
      const float t = static_cast<float>(std::log1p(static_cast<double>(count)) / std::log1p(static_cast<double>(row_max)));
      draw->AddRectFilled(ImVec2(map_x + column * static_cast<float>(b), y + 1), ImVec2(map_x + column * static_cast<float>(b + 1), y + row_height - 1),
                          ramp_color(t));
    }
    if (node == selection.node)
      draw->AddRect(ImVec2(origin.x, y), ImVec2(map_x + column * ExpHistogram::kBins, y + row_height), IM_COL32(255, 255, 255, 220), 0, 0, 1.5f);
  }
  if (hovered) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int node = std::clamp(static_cast<int>((mouse.y - origin.y) / row_height), 0, n - 1);
    const int bin = static_cast<int>((mouse.x - map_x) / column);
    if (bin >= 0 && bin < ExpHistogram::kBins)
      ImGui::SetTooltip("#%d %s (%s)\n%s: %lld values", node, model.node(node).name.c_str(), model.node(node).op_type.c_str(),
                        bin_label(bin).c_str(), static_cast<long long>(rows_[static_cast<size_t>(node)][static_cast<size_t>(bin)]));
    else ImGui::SetTooltip("#%d %s (%s)", node, model.node(node).name.c_str(), model.node(node).op_type.c_str());
    if (ImGui::IsItemClicked()) {
      selection.select_node(node);
      last_selection_ = node;
    }
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace mpa::ui
