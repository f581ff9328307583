// Header: what was audited, against which format, the verdict, and the settings the verdicts rest on.
#include "ui/panels.h"

namespace mpa::ui {

namespace {

void target_selector(const ReportModel& model, DashboardSelection& selection) {
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (!ImGui::BeginCombo("target", selection.target.c_str())) return;
  for (const std::string& target : model.targets())
    if (ImGui::Selectable(target.c_str(), target == selection.target)) selection.target = target;
  ImGui::EndCombo();
}

void thresholds_in_force(const report::Config& config, const std::string& target) {
  if (!ImGui::TreeNode("thresholds in force")) return;
  const report::Thresholds& t = config.thresholds;
  const auto per_format = [&](const std::map<std::string, double>& by_format) {
    const auto it = by_format.find(target);
    return it == by_format.end() ? std::nan("") : it->second;
  };
  ImGui::Text("precision_loss (%s): isolated SQNR < %s dB warn, < %s dB unsafe; own loss >= %s dB", target.c_str(),
              format_number(per_format(t.sqnr_warn_db)).c_str(), format_number(per_format(t.sqnr_unsafe_db)).c_str(),
              format_number(t.own_loss_db).c_str());
  ImGui::Text("underflow: %s warn, %s unsafe of nonzero values;  weight_underflow: %s warn, %s unsafe",
              format_number(t.underflow_warn_frac).c_str(), format_number(t.underflow_unsafe_frac).c_str(),
              format_number(t.weight_underflow_warn_frac).c_str(), format_number(t.weight_underflow_unsafe_frac).c_str());
  ImGui::Text("error jump: %s dB;  mismatch: atol %s, rtol %s;  rel_floor %s", format_number(t.jump_db).c_str(),
              format_number(t.tolerances.atol).c_str(), format_number(t.tolerances.rtol).c_str(),
              t.tolerances.rel_floor > 0 ? format_number(t.tolerances.rel_floor).c_str() : "format's min normal");
  ImGui::TreePop();
}

}  // namespace

void HeaderPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Report", open)) return ImGui::End();
  const report::Report& r = model.report();
  ImGui::Text("model %s", r.model_path.c_str());
  ImGui::SameLine();
  // A model audited in this window is its own path; a report file names the model it was made of.
  const std::string source = model.path() == r.model_path ? "audited in this window" : "report " + model.path();
  ImGui::TextDisabled("(opset %lld, %d nodes, %s)", static_cast<long long>(r.opset), model.node_count(),
                      source.c_str());
  if (selection.target.empty()) {
    ImGui::TextDisabled("the report has no target format");
    return ImGui::End();
  }
  target_selector(model, selection);
  ImGui::SameLine();
  const auto summary = r.summary.find(selection.target);
  const bool pass = summary == r.summary.end() || summary->second.pass;
  gate_badge(model, pass);
  const TargetView& view = model.target_view(selection.target);
  ImGui::SameLine();
  // A zero count in grey: a verdict colour on screen always means nodes with that verdict.
  const auto count = [](int n, const char* what, report::Verdict verdict) {
    if (n > 0) ImGui::TextColored(verdict_color(verdict), "%d %s", n, what);
    else ImGui::TextDisabled("0 %s", what);
  };
  count(view.unsafe_count, "unsafe", report::Verdict::Unsafe);
  ImGui::SameLine();
  count(view.warn_count, "warn", report::Verdict::Warn);
  ImGui::SameLine();
  count(view.safe_count, "safe", report::Verdict::Safe);
  if (view.pending_count > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("%d pending", view.pending_count);
  }
  if (view.not_run_count > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("%d not run", view.not_run_count);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("inside If/Loop/Scan branches that no audited sample took");
  }
  ImGui::SameLine();
  ImGui::TextDisabled("| %lld sample%s%s, reference %s, accumulate %s, profile %s",
                      static_cast<long long>(r.config.samples), r.config.samples == 1 ? "" : "s",
                      r.config.shard.empty() ? "" : (" (shard " + r.config.shard + ")").c_str(),
                      r.config.reference.c_str(), r.config.accumulation.c_str(), r.config.profile.c_str());
  thresholds_in_force(r.config, selection.target);
  ImGui::End();
}

}  // namespace mpa::ui
