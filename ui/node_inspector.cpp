// Node inspector: everything the report knows about the selected node against the selected target.
//   [SECTION] tables: reasons, reference statistics, propagated vs isolated metrics, weights
//   [SECTION] the panel
#include <algorithm>

#include "probes/format_fit.h"
#include "ui/panels.h"

namespace mpa::ui {

namespace {

// [SECTION] Tables

constexpr ImGuiTableFlags kTableFlags =
    ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit;

void table_row(const char* label, std::initializer_list<std::string> cells) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", label);
  for (const std::string& cell : cells) {
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(cell.c_str());
  }
}

std::string count_text(int64_t n) { return std::to_string(n); }

void reasons_table(const report::NodeTarget& node_target) {
  if (node_target.reasons.empty()) return ImGui::TextDisabled("no reasons: safe in this format");
  if (!ImGui::BeginTable("reasons", 3, kTableFlags | ImGuiTableFlags_SizingStretchProp)) return;
  ImGui::TableSetupColumn("code", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("level", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("message", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  for (const report::Reason& reason : node_target.reasons) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(reason.code.c_str());
    ImGui::TableNextColumn();
    verdict_badge(reason.level);
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", reason.message.c_str());
  }
  ImGui::EndTable();
}

// Root and harm: what the node's saturation does downstream, where NaN first appears, and for a node that
// makes NaN of what it reads, the nodes that produced it; each a link.
void consequence_lines(const ReportModel& model, DashboardSelection& selection, const report::NodeTarget& node_target) {
  if (!node_target.consequence.empty()) {
    ImGui::TextDisabled("consequence:");
    ImGui::SameLine();
    ImGui::TextWrapped("%s", node_target.consequence.c_str());
  }
  auto links = [&](const char* label, const std::vector<std::string>& names) {
    if (names.empty()) return;
    ImGui::TextDisabled("%s", label);
    for (const std::string& name : names) {
      ImGui::SameLine();
      const int index = model.node_index(name);
      if (index >= 0)
        node_link(model, selection, index);
      else
        ImGui::TextUnformatted(name.c_str());  // a graph input
    }
  };
  links("NaN first appears at:",
        node_target.harm_at.empty() ? std::vector<std::string>{} : std::vector<std::string>{node_target.harm_at});
  links("root of its NaN:", node_target.roots);
}

void reference_stats_table(const probes::RangeProbe& range, const probes::FormatFit& fit, std::optional<Format> format,
                           const report::Config& config) {
  if (!ImGui::BeginTable("reference", 4, kTableFlags)) return;
  table_row("min", {format_number(range.min), "max", format_number(range.max)});
  table_row("mean", {format_number(range.mean()), "std", format_number(range.std_dev())});
  table_row("zeros", {count_text(range.zeros), "count", count_text(range.count)});
  table_row("NaN",
            {count_text(range.nan), "+Inf / -Inf", count_text(range.pos_inf) + " / " + count_text(range.neg_inf)});
  table_row("overflow",
            {count_text(fit.overflow), "headroom",
             format ? format_number(report::headroom_bits(config, *format, range.absmax()), "%.1f bits") : "-"});
  table_row("flush to 0", {count_text(fit.flush_to_zero) + " (" + count_text(fit.significant_flush) + " significant)",
                           "subnormal", count_text(fit.subnormal)});
  ImGui::EndTable();
}

// Propagated (the deployed model), isolated (the node's own error) and stored (the reference merely
// rounded to the format: the floor) side by side.
void metrics_table(const report::TensorTarget& t) {
  if (!ImGui::BeginTable("metrics", 4, kTableFlags)) return;
  ImGui::TableSetupColumn("metric");
  ImGui::TableSetupColumn("propagated");
  ImGui::TableSetupColumn("isolated");
  ImGui::TableSetupColumn("stored");
  ImGui::TableHeadersRow();
  const probes::Divergence* runs[] = {&t.propagated, &t.isolated, &t.stored};
  const auto row = [&](const char* label, auto&& figure) {
    table_row(label, {figure(*runs[0]), figure(*runs[1]), figure(*runs[2])});
  };
  row("SQNR dB", [](const probes::Divergence& d) { return format_sqnr(d.sqnr_db()); });
  row("cosine", [](const probes::Divergence& d) { return format_number(d.cosine(), "%.6f"); });
  row("max abs err", [](const probes::Divergence& d) { return format_number(d.compared ? d.max_abs : NAN); });
  row("max rel err", [](const probes::Divergence& d) { return format_number(d.compared ? d.max_rel : NAN); });
  row("rmse", [](const probes::Divergence& d) { return format_number(d.rmse()); });
  row("mismatch", [](const probes::Divergence& d) { return format_number(d.mismatch_frac()); });
  row("max ulp", [](const probes::Divergence& d) { return format_number(d.compared ? d.max_ulp : NAN); });
  row("NaN / Inf", [](const probes::Divergence& d) { return count_text(d.nan) + " / " + count_text(d.inf); });
  ImGui::EndTable();
}

void weights_table(const report::NodeStats& node, const std::string& target) {
  if (node.weights.empty()) return;
  section_title("weights");
  if (!ImGui::BeginTable("weights", 6, kTableFlags)) return;
  for (const char* label : {"weight", "count", "overflow", "flush to 0", "significant", "subnormal"})
    ImGui::TableSetupColumn(label);
  ImGui::TableHeadersRow();
  for (const report::WeightStats& w : node.weights) {
    const auto fit = w.targets.find(target);
    if (fit == w.targets.end()) continue;
    table_row(w.name.c_str(),
              {count_text(w.count), count_text(fit->second.overflow), count_text(fit->second.flush_to_zero),
               count_text(fit->second.significant_flush), count_text(fit->second.subnormal)});
  }
  ImGui::EndTable();
}

// Inputs with the node that produced each, outputs with the nodes that read each: the graph around the node.
void neighbours(const ReportModel& model, DashboardSelection& selection, const report::NodeStats& node) {
  section_title("inputs and outputs");
  int link_id = 0;
  const auto tensor_line = [&](const char* direction, const std::string& tensor, const std::vector<int>& nodes,
                               const char* none) {
    ImGui::PushID(link_id++);
    ImGui::TextDisabled("%s", direction);
    ImGui::SameLine();
    ImGui::TextUnformatted(tensor.empty() ? "(omitted)" : tensor.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled(nodes.empty() ? none : direction[0] == 'i' ? "from" : "to");
    for (int n : nodes) {
      ImGui::SameLine();
      node_link(model, selection, n);
    }
    ImGui::PopID();
  };
  for (const std::string& input : node.inputs) {
    const int producer = model.producer_of(input);
    tensor_line("in ", input, producer >= 0 ? std::vector<int>{producer} : std::vector<int>{},
                "(graph input or initializer)");
  }
  for (const std::string& output : node.outputs)
    tensor_line("out", output, model.consumers_of(output), "(graph output / unused)");
}

}  // namespace

// A fix report's view of the node: kept or not and why, and its outputs against the reference with the whole
// model in the fix's target format and with the keep-set in FP32.
void fix_section(const ReportModel& model, int index) {
  const report::FixReport* fix = model.fix();
  if (!fix) return;
  section_title(("fix (" + fix->target + ")").c_str());
  if (const report::KeptNode* kept = model.kept_by_fix(index)) {
    ImGui::TextColored(fix_keep_color(), "kept in FP32");
    ImGui::SameLine();
    ImGui::TextWrapped("%s", kept_because(*kept).c_str());
  } else {
    ImGui::TextDisabled(fix->met ? "in %s with the keep-set" : "no keep-set meets the gates", fix->target.c_str());
  }
  const report::FixNode* figures = model.fix_figures(index);
  if (!figures)
    return ImGui::TextDisabled("no per-node figures in the fix report (no float output, or an older report)");
  if (!ImGui::BeginTable("fix", 3, kTableFlags)) return;
  ImGui::TableSetupColumn("worst output");
  ImGui::TableSetupColumn(("all " + fix->target).c_str());
  ImGui::TableSetupColumn("with the keep-set");
  ImGui::TableHeadersRow();
  const report::FixNodeRun none;
  const report::FixNodeRun& after = figures->after ? *figures->after : none;
  const auto after_text = [&](std::string text) { return figures->after ? text : std::string("-"); };
  table_row("SQNR dB", {format_sqnr(figures->before.sqnr_db), after_text(format_sqnr(after.sqnr_db))});
  table_row("max rel err", {format_number(figures->before.max_rel_err), after_text(format_number(after.max_rel_err))});
  table_row("max abs err", {format_number(figures->before.max_abs_err), after_text(format_number(after.max_abs_err))});
  table_row("NaN/Inf", {count_text(figures->before.nonfinite), after_text(count_text(after.nonfinite))});
  ImGui::EndTable();
}

// [SECTION] The panel

void NodeInspectorPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Node inspector", open)) return ImGui::End();
  if (selection.node < 0 || selection.node >= model.node_count() || selection.target.empty()) {
    ImGui::TextDisabled("select a node in the table, the graph, the plot or the alerts");
    return ImGui::End();
  }
  const report::NodeStats& node = model.node(selection.node);
  const std::string& target = selection.target;
  const std::optional<Format> format = parse_format(target);
  const auto node_target = node.targets.find(target);
  const NodeFigures& figures = model.target_view(target).nodes[static_cast<size_t>(selection.node)];

  ImGui::Text("#%d %s", selection.node, node.name.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("(%s)", node.op_type.c_str());
  if (!node.op_class.empty()) {
    ImGui::SameLine();
    if (node.sums_in.empty())
      ImGui::TextDisabled("%s", node.op_class.c_str());
    else
      ImGui::TextDisabled("%s, sums in %s", node.op_class.c_str(), node.sums_in.c_str());
  }
  if (!node.scope.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("inside");
    ImGui::SameLine();
    node_link(model, selection, model.top_level_of(selection.node));
  }
  if (figures.unmeasured()) {
    ImGui::SameLine();
    ImGui::TextDisabled(figures.pending ? "pending: the audit has not run it yet"
                                        : "not run: no audited sample took this branch or loop iteration");
    pin_toggle(model, selection, {selection.node}, "", true);
    return ImGui::End();
  }
  if (node_target != node.targets.end()) {
    ImGui::SameLine();
    verdict_badge(figures);
    ImGui::SameLine();
    ImGui::TextDisabled("in %s", target.c_str());
    if (node_target->second.propagated_jump_db > 0) {
      ImGui::SameLine();
      ImGui::TextDisabled("; propagated SQNR drops %.1f dB here", node_target->second.propagated_jump_db);
    }
  }
  if (node_target != node.targets.end() && node_target->second.isolated_skipped > 0)
    ImGui::TextDisabled("isolated run skipped in %lld of %lld executions (--isolated %s): its figures are the others'",
                        static_cast<long long>(node_target->second.isolated_skipped),
                        static_cast<long long>(node.executions), model.report().config.isolated.c_str());
  pin_toggle(model, selection, {selection.node}, "", true);
  if (node_target != node.targets.end()) {
    reasons_table(node_target->second);
    consequence_lines(model, selection, node_target->second);
  }
  fix_section(model, selection.node);
  neighbours(model, selection, node);
  weights_table(node, target);

  for (const report::TensorStats& tensor : node.tensors) {
    ImGui::PushID(tensor.name.c_str());
    std::string shape;
    for (int64_t d : tensor.shape) {
      if (!shape.empty()) shape += 'x';
      shape += std::to_string(d);
    }
    const std::string header = "output " + tensor.name + "  " + tensor.dtype + "[" + shape + "]";
    const auto tensor_target = tensor.targets.find(target);
    if (ImGui::CollapsingHeader(header.c_str(), ImGuiTreeNodeFlags_DefaultOpen)) {
      if (!tensor.measured || tensor_target == tensor.targets.end()) {
        ImGui::TextDisabled("not a floating tensor: nothing measured");
      } else {
        ImGui::Checkbox("log counts", &log_counts);
        exponent_histogram("histogram", {&tensor.hist, "reference"},
                           {&tensor_target->second.propagated_hist, "propagated"}, format, log_counts);
        section_title("reference");
        reference_stats_table(tensor.range, tensor_target->second.fit, format, model.report().config);
        section_title("divergence from the reference");
        metrics_table(tensor_target->second);
      }
    }
    ImGui::PopID();
  }
  ImGui::End();
}

}  // namespace mpa::ui
