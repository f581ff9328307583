// The look every panel shares: verdict colours, number formatting, links to nodes.
#include <cstdio>

#include "ui/panels.h"

namespace mpa::ui {

ImVec4 verdict_color(report::Verdict verdict) {
  switch (verdict) {
    case report::Verdict::Unsafe: return ImVec4(0.92f, 0.26f, 0.24f, 1.0f);
    case report::Verdict::Warn: return ImVec4(0.95f, 0.68f, 0.18f, 1.0f);
    case report::Verdict::Safe: break;
  }
  return ImVec4(0.35f, 0.80f, 0.40f, 1.0f);
}

void verdict_badge(report::Verdict verdict) {
  const char* label = verdict == report::Verdict::Unsafe ? "UNSAFE" : verdict == report::Verdict::Warn ? "WARN" : "SAFE";
  ImGui::TextColored(verdict_color(verdict), "%s", label);
}

std::string format_number(double value, const char* format) {
  if (std::isnan(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string format_sqnr(double sqnr_db) {
  if (sqnr_db >= probes::Divergence::kMaxSqnrDb) return "exact";
  return format_number(sqnr_db, "%.1f");
}

void section_title(const char* title) {
  ImGui::Spacing();
  ImGui::TextDisabled("%s", title);
  ImGui::Separator();
}

void node_link(const ReportModel& model, DashboardSelection& selection, int node_index) {
  const report::NodeStats& node = model.node(node_index);
  ImGui::PushID(node_index);
  if (ImGui::SmallButton(node.name.c_str())) selection.select_node(node_index);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("#%d %s (%s)", node_index, node.name.c_str(), node.op_type.c_str());
  ImGui::PopID();
}

}  // namespace mpa::ui
