// Report card: the whole audit on one screen, for a reader who has a minute (TensorRT Engine Explorer's
// per-layer precision charts, TensorBoard's alerts): gate result and verdict counts per format, model facts,
// the selected format's culprits, graph outputs and keep-FP32 list, error along execution order coloured by
// verdict, and verdict counts by op type. Zero counts are drawn grey, never in a verdict colour.
#include <algorithm>
#include <map>
#include <set>

#include "ui/panels.h"

namespace mpa::ui {

namespace {

constexpr ImGuiTableFlags kTableFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit;

void count_cell(int count, report::Verdict verdict) {
  if (count > 0) ImGui::TextColored(verdict_color(verdict), "%d", count);
  else ImGui::TextDisabled("0");
}

// A horizontal bar split into unsafe, warn and safe shares; empty shares are not drawn.
void verdict_bar(int unsafe, int warn, int safe, float width) {
  const float height = ImGui::GetTextLineHeight();
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(width, height));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(at, ImVec2(at.x + width, at.y + height), IM_COL32(40, 40, 48, 255));
  const float total = static_cast<float>(std::max(unsafe + warn + safe, 1));
  float x = at.x;
  for (const auto& [count, verdict] : {std::pair{unsafe, report::Verdict::Unsafe}, std::pair{warn, report::Verdict::Warn},
                                       std::pair{safe, report::Verdict::Safe}}) {
    if (count == 0) continue;
    const float w = width * static_cast<float>(count) / total;
    draw->AddRectFilled(ImVec2(x, at.y + 1), ImVec2(x + w, at.y + height - 1), ImGui::GetColorU32(verdict_color(verdict)));
    x += w;
  }
}

void fact(const char* label, const std::string& value) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", label);
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(value.c_str());
}

void model_facts(const ReportModel& model) {
  const report::Report& r = model.report();
  std::set<std::string> op_types;
  for (const report::NodeStats& node : r.nodes) op_types.insert(node.op_type);
  if (!ImGui::BeginTable("facts", 2, kTableFlags)) return;
  fact("model", r.model_path);
  fact("sha256", r.model_sha256.substr(0, 16) + (r.model_sha256.size() > 16 ? "..." : ""));
  fact("nodes", std::to_string(model.node_count()) + " (" + std::to_string(op_types.size()) + " op types), opset " +
                    std::to_string(r.opset));
  fact("samples", std::to_string(r.config.samples) + (r.config.shard.empty() ? "" : " (shard " + r.config.shard + ")") +
                      ", inputs: " + r.config.inputs_text());
  fact("reference", r.config.reference + ", accumulate " + r.config.accumulation + ", profile " + r.config.profile +
                        (r.config.fp8_scaling != "none" ? ", fp8 scaling " + r.config.fp8_scaling : ""));
  fact("report", model.path() + " (mpaudit " + r.tool_version + ")");
  ImGui::EndTable();
}

// One row per target: gate, counts, a verdict bar, first unsafe node and first error jump; a click on the
// format picks it for the rest of the dashboard.
void gate_table(const ReportModel& model, DashboardSelection& selection) {
  if (!ImGui::BeginTable("gates", 8, kTableFlags)) return;
  for (const char* label : {"format", "gate", "unsafe", "warn", "safe", "verdicts", "first unsafe", "first error jump"})
    ImGui::TableSetupColumn(label);
  ImGui::TableHeadersRow();
  for (const std::string& target : model.targets()) {
    const TargetView& view = model.target_view(target);
    const auto summary = model.report().summary.find(target);
    const bool pass = summary == model.report().summary.end() || summary->second.pass;
    ImGui::PushID(target.c_str());
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (ImGui::Selectable(target.c_str(), target == selection.target, ImGuiSelectableFlags_None, ImVec2(ImGui::GetFontSize() * 4, 0)))
      selection.target = target;
    ImGui::TableNextColumn();
    gate_badge(model, pass);
    ImGui::TableNextColumn();
    count_cell(view.unsafe_count, report::Verdict::Unsafe);
    ImGui::TableNextColumn();
    count_cell(view.warn_count, report::Verdict::Warn);
    ImGui::TableNextColumn();
    count_cell(view.safe_count, report::Verdict::Safe);
    ImGui::TableNextColumn();
    verdict_bar(view.unsafe_count, view.warn_count, view.safe_count, ImGui::GetFontSize() * 10);
    ImGui::TableNextColumn();
    if (view.unsafe.first_node >= 0) node_link(model, selection, view.unsafe.first_node);
    else ImGui::TextDisabled("none");
    ImGui::TableNextColumn();
    if (view.first_error_jump >= 0) node_link(model, selection, view.first_error_jump);
    else ImGui::TextDisabled("none");
    ImGui::PopID();
  }
  ImGui::EndTable();
}

std::string reason_codes(const report::NodeStats& node, const std::string& target) {
  const auto it = node.targets.find(target);
  if (it == node.targets.end()) return "";
  std::string codes;
  for (const report::Reason& reason : it->second.reasons) {
    if (codes.find(reason.code) != std::string::npos) continue;
    codes += (codes.empty() ? "" : " ") + reason.code;
  }
  return codes;
}

void culprits_table(const ReportModel& model, DashboardSelection& selection, const report::TargetSummary& summary) {
  constexpr size_t kShown = 8;
  if (summary.culprits.empty()) return ImGui::TextDisabled("no culprits: no node loses precision or range on its own");
  if (!ImGui::BeginTable("culprits", 5, kTableFlags)) return;
  for (const char* label : {"#", "node", "verdict", "iso dB", "reasons"}) ImGui::TableSetupColumn(label);
  ImGui::TableHeadersRow();
  const TargetView& view = model.target_view(selection.target);
  for (size_t rank = 0; rank < std::min(kShown, summary.culprits.size()); ++rank) {
    const int node = model.node_index(summary.culprits[rank]);
    if (node < 0) continue;
    const NodeFigures& f = view.nodes[static_cast<size_t>(node)];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%d", static_cast<int>(rank + 1));
    ImGui::TableNextColumn();
    node_link(model, selection, node);
    ImGui::SameLine();
    ImGui::TextDisabled("%s", model.node(node).op_type.c_str());
    ImGui::TableNextColumn();
    verdict_badge(f);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_sqnr(f.isolated_sqnr_db).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(reason_codes(model.node(node), selection.target).c_str());
  }
  ImGui::EndTable();
  if (summary.culprits.size() > kShown) ImGui::TextDisabled("and %d more", static_cast<int>(summary.culprits.size() - kShown));
}

void outputs_table(const report::TargetSummary& summary) {
  if (summary.outputs.empty()) return ImGui::TextDisabled("no floating graph outputs");
  if (!ImGui::BeginTable("outputs", 5, kTableFlags)) return;
  for (const char* label : {"output", "max abs err", "max rel err", "cosine", "SQNR dB"}) ImGui::TableSetupColumn(label);
  ImGui::TableHeadersRow();
  for (const report::OutputSummary& o : summary.outputs) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(o.name.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_number(o.max_abs_err).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_number(o.max_rel_err).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_number(o.cosine, "%.6f").c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_sqnr(o.sqnr_db).c_str());
  }
  ImGui::EndTable();
}

void keep_fp32_list(const report::TargetSummary& summary) {
  if (summary.keep_fp32.empty()) return ImGui::TextDisabled("nothing needs FP32");
  std::string list;
  for (const std::string& name : summary.keep_fp32) list += (list.empty() ? "" : ",") + name;
  if (ImGui::SmallButton("copy")) ImGui::SetClipboardText(list.c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("copy as `mpaudit run --keep-fp32` takes it");
  ImGui::SameLine();
  ImGui::TextWrapped("%s", list.c_str());
}

// Propagated SQNR per node as a bar from the bottom (higher = better), coloured by the node's verdict;
// hover names the node, click selects it.
void error_strip(const ReportModel& model, DashboardSelection& selection, float height) {
  const TargetView& view = model.target_view(selection.target);
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float width = std::max(ImGui::GetContentRegionAvail().x, 100.0f);
  ImGui::InvisibleButton("error strip", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(at, ImVec2(at.x + width, at.y + height), IM_COL32(20, 20, 26, 255));
  constexpr double kTopDb = 120;
  const int n = model.node_count();
  const float step = width / static_cast<float>(std::max(n, 1));
  for (int i = 0; i < n; ++i) {
    const NodeFigures& f = view.nodes[static_cast<size_t>(i)];
    double db = f.propagated_sqnr_db;
    if (std::isnan(db)) {
      if (f.propagated_nonfinite == 0) continue;  // nothing measured
      db = 0;
    }
    const float share = static_cast<float>(std::clamp(db, 0.0, kTopDb) / kTopDb);
    const float bar = std::max(2.0f, share * (height - 2));
    const float x0 = at.x + step * static_cast<float>(i), x1 = std::max(x0 + 1, x0 + step - (step > 3 ? 1 : 0));
    draw->AddRectFilled(ImVec2(x0, at.y + height - bar), ImVec2(x1, at.y + height), ImGui::GetColorU32(verdict_color(f.verdict)));
  }
  if (selection.node >= 0) {
    const float x = at.x + step * (static_cast<float>(selection.node) + 0.5f);
    draw->AddLine(ImVec2(x, at.y), ImVec2(x, at.y + height), IM_COL32(255, 255, 255, 200), 2);
  }
  if (hovered && n > 0) {
    const int node = std::clamp(static_cast<int>((ImGui::GetIO().MousePos.x - at.x) / step), 0, n - 1);
    ImGui::SetTooltip("#%d %s (%s)\npropagated SQNR %s dB", node, model.node(node).name.c_str(), model.node(node).op_type.c_str(),
                      format_sqnr(view.nodes[static_cast<size_t>(node)].propagated_sqnr_db).c_str());
    if (ImGui::IsItemClicked()) selection.select_node(node);
  }
}

// Op types with the most unsafe, then warn nodes first; as many as fit in `rows`.
void verdicts_by_op(const ReportModel& model, const std::string& target, int rows) {
  struct OpCounts {
    std::string op;
    int unsafe = 0, warn = 0, safe = 0;
  };
  std::map<std::string, OpCounts> by_op;
  const TargetView& view = model.target_view(target);
  for (int i = 0; i < model.node_count(); ++i) {
    if (view.nodes[static_cast<size_t>(i)].unmeasured()) continue;
    OpCounts& c = by_op[model.node(i).op_type];
    c.op = model.node(i).op_type;
    const report::Verdict v = view.nodes[static_cast<size_t>(i)].verdict;
    c.unsafe += v == report::Verdict::Unsafe;
    c.warn += v == report::Verdict::Warn;
    c.safe += v == report::Verdict::Safe;
  }
  std::vector<OpCounts> ops;
  for (auto& [op, counts] : by_op) ops.push_back(counts);
  std::stable_sort(ops.begin(), ops.end(), [](const OpCounts& a, const OpCounts& b) {
    if (a.unsafe != b.unsafe) return a.unsafe > b.unsafe;
    if (a.warn != b.warn) return a.warn > b.warn;
    return a.unsafe + a.warn + a.safe > b.unsafe + b.warn + b.safe;
  });
  int most = 1;
  for (const OpCounts& c : ops) most = std::max(most, c.unsafe + c.warn + c.safe);
  if (!ImGui::BeginTable("by op", 3, ImGuiTableFlags_SizingFixedFit)) return;
  const float bar_width = std::max(ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 14, 60.0f);
  for (size_t i = 0; i < ops.size() && static_cast<int>(i) < rows; ++i) {
    const OpCounts& c = ops[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(c.op.c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%d/%d/%d", c.unsafe, c.warn, c.safe);
    ImGui::TableNextColumn();
    verdict_bar(c.unsafe, c.warn, c.safe, bar_width * static_cast<float>(c.unsafe + c.warn + c.safe) / static_cast<float>(most));
  }
  ImGui::EndTable();
  if (static_cast<int>(ops.size()) > rows) ImGui::TextDisabled("and %d more op types", static_cast<int>(ops.size()) - rows);
}

}  // namespace

void ReportCardPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Report card", open)) return ImGui::End();
  if (selection.target.empty()) {
    ImGui::TextDisabled("the report has no target format");
    return ImGui::End();
  }
  static const report::TargetSummary kNoSummary;
  const auto summary_it = model.report().summary.find(selection.target);
  const report::TargetSummary& summary = summary_it == model.report().summary.end() ? kNoSummary : summary_it->second;
  const float strip_height = ImGui::GetFontSize() * 6;
  if (ImGui::BeginTable("card", 2, ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    section_title("gate and verdicts per format (click a format to pick it)");
    gate_table(model, selection);
    section_title(("top culprits in " + selection.target + ", by their own isolated error").c_str());
    culprits_table(model, selection, summary);
    section_title("model");
    model_facts(model);
    ImGui::TableNextColumn();
    section_title(("graph outputs in " + selection.target).c_str());
    outputs_table(summary);
    section_title(("keep in FP32 (" + selection.target + ")").c_str());
    keep_fp32_list(summary);
    section_title(("verdicts by op type in " + selection.target + " (unsafe/warn/safe)").c_str());
    const float room = ImGui::GetContentRegionAvail().y - strip_height - ImGui::GetFrameHeightWithSpacing() * 3;
    verdicts_by_op(model, selection.target, std::max(3, static_cast<int>(room / ImGui::GetFrameHeightWithSpacing())));
    ImGui::EndTable();
  }
  section_title(("propagated SQNR along execution order in " + selection.target + ", coloured by verdict (0..120 dB)").c_str());
  error_strip(model, selection, strip_height);
  ImGui::End();
}

}  // namespace mpa::ui
