// Fix: a fix report over the audit (`mpaudit view AUDIT.json --fix FIX.json`): whether a keep-set meets the
// gates, each gate with the whole model in the target format and with the set, the kept nodes with why each
// is needed (links), the recipes judged beside it, and what the search cost.
#include "ui/panels.h"

namespace mpa::ui {

namespace {

constexpr ImGuiTableFlags kFlags =
    ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit;

// A gate's value, in the verdict colour of whether it held; "n/a" where there was nothing to measure.
void gate_value(const report::FixGateValue& g) {
  const std::string text = std::isnan(g.value) ? "n/a" : format_number(g.value, "%.4g");
  ImGui::TextColored(verdict_color(g.held ? report::Verdict::Safe : report::Verdict::Unsafe), "%s%s", text.c_str(),
                     g.held ? "" : " fails");
}

void gates_table(const report::FixReport& fix) {
  if (!ImGui::BeginTable("gates", 4, kFlags)) return;
  ImGui::TableSetupColumn("gate");
  ImGui::TableSetupColumn("output");
  ImGui::TableSetupColumn(("all " + fix.target).c_str());
  ImGui::TableSetupColumn("with the keep-set");
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < fix.before.size(); ++i) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fix.before[i].gate.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(fix.before[i].output.c_str());
    ImGui::TableNextColumn();
    gate_value(fix.before[i]);
    ImGui::TableNextColumn();
    if (fix.met && i < fix.after.size())
      gate_value(fix.after[i]);
    else
      ImGui::TextDisabled("-");
  }
  ImGui::EndTable();
}

void keep_table(const ReportModel& model, DashboardSelection& selection, const report::FixReport& fix) {
  if (fix.keep.empty()) return;
  if (!ImGui::BeginTable("keep", 3, kFlags)) return;
  ImGui::TableSetupColumn("kept in FP32");
  ImGui::TableSetupColumn("audit");
  ImGui::TableSetupColumn("needed because", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  for (const report::KeptNode& kept : fix.keep) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    node_link(model, selection, model.node_index(kept.node));
    ImGui::SameLine();
    ImGui::TextDisabled("%s", kept.op_type.c_str());
    ImGui::TableNextColumn();
    verdict_badge(report::parse_verdict(kept.audit_verdict));
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", kept_because(kept).c_str());
  }
  ImGui::EndTable();
}

}  // namespace

void FixPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Fix", open)) return ImGui::End();
  const report::FixReport* fix = model.fix();
  if (!fix) return ImGui::End();
  ImGui::PushStyleColor(ImGuiCol_Button, verdict_color(fix->met ? report::Verdict::Safe : report::Verdict::Unsafe));
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0, 0, 0, 1));
  ImGui::SmallButton(fix->met ? " MET " : " NOT MET ");
  ImGui::PopStyleColor(2);
  ImGui::SameLine();
  const std::string nodes = std::to_string(fix->keep.size()) + (fix->keep.size() == 1 ? " node" : " nodes");
  if (!fix->met)
    ImGui::Text("fix %s: no keep-set meets the gates", fix->target.c_str());
  else if (fix->keep.empty())
    ImGui::Text("fix %s: the whole model meets the gates in %s; nothing to keep", fix->target.c_str(),
                fix->target.c_str());
  else
    ImGui::Text("fix %s: keep %s in FP32%s", fix->target.c_str(), nodes.c_str(),
                fix->minimal ? " (each one needed: without it a gate fails)" : "");
  ImGui::SameLine();
  ImGui::TextColored(fix_keep_color(), "KEEP");
  ImGui::SameLine();
  ImGui::TextDisabled("marks them in the table and graph; %lld sample%s", static_cast<long long>(fix->samples),
                      fix->samples == 1 ? "" : "s");
  if (!fix->note.empty()) ImGui::TextWrapped("note: %s", fix->note.c_str());
  ImGui::Text("cost: %.2f full-run equivalents", fix->total_run_equivalents());
  ImGui::SameLine();
  ImGui::TextDisabled(
      "(audit %.2f, reference %lld, %lld mixed-precision runs %.2f; beside it: %lld runs of the "
      "presets, %lld for the per-node figures)",
      fix->audit_run_equivalents, static_cast<long long>(fix->reference_runs), static_cast<long long>(fix->mixed_runs),
      fix->mixed_run_equivalents, static_cast<long long>(fix->comparison_runs),
      static_cast<long long>(fix->node_figure_runs));
  gates_table(*fix);
  keep_table(model, selection, *fix);
  for (const report::PresetComparison& p : fix->presets) {
    ImGui::TextDisabled("preset %s: %lld node%s in FP32,", p.name.c_str(), static_cast<long long>(p.kept),
                        p.kept == 1 ? "" : "s");
    ImGui::SameLine();
    ImGui::TextColored(verdict_color(p.pass ? report::Verdict::Safe : report::Verdict::Unsafe), "%s",
                       p.pass ? "meets the gates" : "fails");
  }
  ImGui::End();
}

}  // namespace mpa::ui
