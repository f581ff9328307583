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

void health_pills(const ValueHealth& health) {
  struct Pill {
    const char* letter;
    int64_t count;
    ImU32 color;  // Okabe-Ito colours, distinct under the common colour-blindnesses; the letter decides anyway
    const char* meaning;
  };
  const Pill pills[] = {
      {"N", health.nan, IM_COL32(213, 94, 0, 255), "NaN"},
      {"I", health.inf_or_overflow, IM_COL32(230, 159, 0, 255), "Inf or overflow"},
      {"s", health.subnormal, IM_COL32(204, 121, 167, 255), "subnormal"},
      {"f", health.flushed, IM_COL32(86, 180, 233, 255), "flushed to zero"},
      {"n", health.normal, IM_COL32(150, 150, 150, 255), "normal"},
  };
  const float height = ImGui::GetTextLineHeight(), pad = height * 0.3f;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  bool first = true;
  for (const Pill& pill : pills) {
    if (pill.count == 0) continue;
    if (!first) ImGui::SameLine(0, 2);
    first = false;
    const ImVec2 text_size = ImGui::CalcTextSize(pill.letter);
    const ImVec2 min = ImGui::GetCursorScreenPos(), size(text_size.x + 2 * pad, height);
    ImGui::Dummy(size);
    draw->AddRectFilled(min, ImVec2(min.x + size.x, min.y + size.y), pill.color, height / 2);
    draw->AddText(ImVec2(min.x + pad, min.y), IM_COL32(0, 0, 0, 255), pill.letter);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: %lld reference values", pill.meaning, static_cast<long long>(pill.count));
  }
  if (first) ImGui::TextDisabled("-");
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
