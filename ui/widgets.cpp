// The look every panel shares: verdict colours, number formatting, links to nodes.
#include <cstdio>

#include "ui/panels.h"

namespace mpa::ui {

namespace {
const ImVec4 kKeptFp32Color(0.34f, 0.71f, 0.91f, 1.0f);  // blue: no verdict colour
}  // namespace

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

void gate_badge(const ReportModel& model, bool pass) {
  // No gate result before every node and sample has run.
  if (model.partial()) return ImGui::TextDisabled("[auditing]");
  ImGui::PushStyleColor(ImGuiCol_Button, verdict_color(pass ? report::Verdict::Safe : report::Verdict::Unsafe));
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0, 0, 0, 1));
  ImGui::SmallButton(pass ? " PASS " : " FAIL ");
  ImGui::PopStyleColor(2);
}

void verdict_badge(const NodeFigures& figures) {
  if (figures.unmeasured()) return ImGui::TextDisabled(figures.pending ? "pending" : "not run");
  verdict_badge(figures.verdict);
  if (!figures.kept_fp32) return;
  ImGui::SameLine();
  ImGui::TextColored(kKeptFp32Color, "FP32");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("computed in FP32 in this target's runs (--keep-fp32 or a what-if pin)");
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

void audit_progress(const AuditStatus& status, float width) {
  const float fraction = status.total > 0 ? static_cast<float>(status.done) / static_cast<float>(status.total) : 0.0f;
  char text[128];
  std::snprintf(text, sizeof text, "auditing: %lld / %lld node runs, %.1f s, ETA %s",
                static_cast<long long>(status.done), static_cast<long long>(status.total), status.elapsed_s,
                std::isnan(status.eta_s) ? "-" : format_number(status.eta_s, "%.1f s").c_str());
  ImGui::ProgressBar(fraction, ImVec2(width, 0), text);
}

void pin_toggle(const ReportModel& model, DashboardSelection& selection, const std::vector<int>& nodes,
                std::string what, bool as_button) {
  if (!selection.pins || nodes.empty()) return;
  if (what.empty()) what = model.node(model.top_level_of(nodes.front())).name;
  const bool pinned = selection.pins->all_pinned(model, nodes);
  const std::string label =
      pinned ? "unpin " + what + " (back to " + selection.target + ")" : "pin " + what + " to FP32";
  if (as_button ? ImGui::SmallButton(label.c_str()) : ImGui::Selectable(label.c_str()))
    selection.pins->set(model, nodes, !pinned);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("what-if: the audit runs again with the pinned nodes in FP32");
}

}  // namespace mpa::ui
