// Alerts: where in execution order each kind of trouble starts, so the user can jump to its origin
// (TensorBoard Debugger V2's alerts, extended with the audit's own findings).
#include "ui/panels.h"

namespace mpa::ui {

namespace {

// One alert row: what, how many nodes, and the first of them as a link ("none" when nothing was found).
void alert_row(const ReportModel& model, DashboardSelection& selection, const char* what, int first_node,
               const std::string& count, report::Verdict severity) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  if (first_node >= 0) ImGui::TextColored(verdict_color(severity), "%s", what);
  else ImGui::TextDisabled("%s", what);
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(count.c_str());
  ImGui::TableNextColumn();
  if (first_node < 0) return ImGui::TextDisabled("none");
  node_link(model, selection, first_node);
  ImGui::SameLine();
  ImGui::TextDisabled("#%d %s", first_node, model.node(first_node).op_type.c_str());
}

// Under an alert row: what the first node's saturation does downstream (its traced consequence).
void consequence_row(const ReportModel& model, int node, const std::string& target) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TableNextColumn();
  ImGui::TableNextColumn();
  ImGui::TextWrapped("%s", model.node(node).targets.at(target).consequence.c_str());
}

std::string nodes_count(int count) { return std::to_string(count) + (count == 1 ? " node" : " nodes"); }

// How far the propagated SQNR falls at the jump; a run that turns NaN/Inf there has no SQNR left to compare.
std::string jump_size(const ReportModel& model, const TargetView& view, const std::string& target) {
  const int jump = view.first_error_jump;
  if (jump < 0) return "";
  const auto node_target = model.node(jump).targets.find(target);
  if (node_target != model.node(jump).targets.end() && node_target->second.propagated_jump_db > 0)
    return format_number(node_target->second.propagated_jump_db, "%.1f dB drop");
  return view.nodes[static_cast<size_t>(jump)].propagated_nonfinite > 0 ? "turns NaN/Inf" : "";
}

}  // namespace

void AlertsPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Alerts", open)) return ImGui::End();
  if (selection.target.empty()) return ImGui::End();
  const TargetView& view = model.target_view(selection.target);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("alerts", 3, flags)) {
    ImGui::TableSetupColumn("alert");
    ImGui::TableSetupColumn("count");
    ImGui::TableSetupColumn("first node, in execution order", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    alert_row(model, selection, "overflow", view.overflow.first_node, nodes_count(view.overflow.node_count),
              report::Verdict::Unsafe);
    alert_row(model, selection, "NaN / Inf", view.nonfinite.first_node, nodes_count(view.nonfinite.node_count),
              report::Verdict::Unsafe);
    alert_row(model, selection, "unsafe", view.unsafe.first_node, nodes_count(view.unsafe.node_count),
              report::Verdict::Unsafe);
    alert_row(model, selection, "harm root", view.harm_root.first_node, nodes_count(view.harm_root.node_count),
              report::Verdict::Unsafe);
    if (view.harm_root.first_node >= 0) consequence_row(model, view.harm_root.first_node, selection.target);
    alert_row(model, selection, "saturation absorbed", view.absorbed.first_node, nodes_count(view.absorbed.node_count),
              report::Verdict::Warn);
    if (view.absorbed.first_node >= 0) consequence_row(model, view.absorbed.first_node, selection.target);
    alert_row(model, selection, "error jump", view.first_error_jump, jump_size(model, view, selection.target),
              report::Verdict::Warn);
    ImGui::EndTable();
  }
  ImGui::End();
}

}  // namespace mpa::ui
