// What-if: pin nodes to FP32 (here, or from the node table, inspector and graph) and watch the audit run
// again with them: its progress, the keep-FP32 list to copy into a deployment, and what the re-run changed
// in unsafe counts and end-to-end output error.
#include "ui/panels.h"

namespace mpa::ui {

void WhatIfPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("What-if", open)) return ImGui::End();
  if (status.running)
    audit_progress(status, -1);
  else if (!status.error.empty())
    ImGui::TextColored(verdict_color(report::Verdict::Unsafe), "audit failed: %s", status.error.c_str());
  else
    ImGui::TextWrapped(
        "audited in %s s; pin nodes to FP32 from the table or graph (right-click) or the inspector, "
        "and the audit runs again with them",
        format_number(status.elapsed_s, "%.2g").c_str());
  if (!changes.empty()) {
    section_title("the last re-run, before -> after");
    for (const std::string& line : changes) ImGui::TextWrapped("%s", line.c_str());
  }

  const std::vector<std::string> names = selection.pins->names(model);
  section_title(("keep in FP32: " + std::to_string(names.size()) + " pinned").c_str());
  if (names.empty()) {
    ImGui::TextDisabled("nothing pinned; every node runs in the target format");
    return ImGui::End();
  }
  if (ImGui::SmallButton("Copy")) ImGui::SetClipboardText(keep_fp32_clipboard(names).c_str());
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("one name per line, then as --keep-fp32 flags for `mpaudit audit` or `run`");
  for (const std::string& name : names) {
    ImGui::PushID(name.c_str());
    if (ImGui::SmallButton("unpin")) selection.pins->unpin(name);
    ImGui::SameLine();
    if (const int index = model.node_index(name); index >= 0)
      node_link(model, selection, index);
    else
      ImGui::TextColored(verdict_color(report::Verdict::Warn), "%s (no such node)", name.c_str());
    ImGui::PopID();
  }
  ImGui::End();
}

}  // namespace mpa::ui
