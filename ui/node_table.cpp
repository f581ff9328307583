// Node table: every node in execution order with its figures against the selected target; sortable by
// each column (re-sorted only when ImGui marks the sort specs dirty or the rows change), filtered by the
// filter language of ui/view_model.h, drawn through ImGuiListClipper.
#include <algorithm>

#include "ui/panels.h"
#include "ui/view_model.h"

namespace mpa::ui {

namespace {

// Display order matches NodeColumn up to Cosine (Time and FixKept are filter fields without a column).
constexpr int kColumns = static_cast<int>(NodeColumn::Cosine) + 1;

struct ColumnSpec {
  const char* label;
  const char* tooltip;
};
constexpr ColumnSpec kColumnSpecs[kColumns] = {
    {"#", "execution order"},
    {"name", "node name"},
    {"op", "ONNX op type"},
    {"verdict", "against the selected target"},
    {"fix: all dB", "fix report: SQNR of the node's outputs with the whole model in the fix's target format"},
    {"fix: kept dB", "fix report: SQNR of the node's outputs with the keep-set in FP32 (the verified mixed run)"},
    {"health",
     "reference output values in the format: N NaN, I Inf or overflow, s subnormal, f flushed to zero, "
     "n normal (pills only where the count is nonzero; sorts by NaN + Inf/overflow)"},
    {"absmax", "largest |value| of the reference outputs"},
    {"headroom", "bits of range above absmax before the format's max finite value (negative: overflow)"},
    {"overflow", "reference values beyond the format's max finite value"},
    {"flush %", "nonzero reference values that round to zero in the format"},
    {"iso dB", "isolated SQNR: the node alone in the format, fed stored reference inputs"},
    {"prop dB", "propagated SQNR: the whole graph in the format"},
    {"cosine", "propagated cosine similarity to the reference"},
};
static_assert(sizeof kColumnSpecs / sizeof kColumnSpecs[0] == kColumns, "one spec per column");

constexpr int column_index(NodeColumn column) { return static_cast<int>(column); }

std::vector<SortKey> sort_keys(const ImGuiTableSortSpecs* specs) {
  std::vector<SortKey> keys;
  for (int s = 0; specs && s < specs->SpecsCount; ++s)
    keys.push_back({static_cast<NodeColumn>(specs->Specs[s].ColumnIndex),
                    specs->Specs[s].SortDirection == ImGuiSortDirection_Ascending});
  return keys;
}

}  // namespace

void NodeTablePanel::rebuild_rows(const ReportModel& model, const std::string& target, const ImGuiTableSortSpecs* sort_specs) {
  const NodeFilter filter = NodeFilter::parse(filter_text);
  filter_error = filter.error();
  visible_rows = filtered_sorted_rows(model, target, filter, sort_keys(sort_specs));
}

void NodeTablePanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Nodes", open)) return ImGui::End();
  if (selection.target.empty()) return ImGui::End();
  const TargetView& view = model.target_view(selection.target);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
  // Enter keeps the focus in the box and steps the selection through the hits.
  const ImGuiInputTextFlags filter_flags = ImGuiInputTextFlags_EnterReturnsTrue;
  const bool enter = ImGui::InputTextWithHint("##filter", "name/op regex, overflow>0, iso.sqnr_db<20 ...", filter_text,
                                              sizeof filter_text, filter_flags);
  if (ImGui::IsItemEdited()) rows_dirty = true;
  if (enter) {
    ImGui::SetKeyboardFocusHere(-1);
    step_to_next_hit = true;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Space-separated terms, all must hold. FIELD OP NUMBER with FIELD one of index absmax\n"
                      "headroom overflow flush iso.sqnr_db prop.sqnr_db cosine time and OP > >= < <= == !=;\n"
                      "any other term is a case-insensitive regex (or substring) over name and op.\n"
                      "Enter selects the next hit.");
  ImGui::SameLine();
  ImGui::TextDisabled("%d of %d nodes, %s", static_cast<int>(visible_rows.size()), model.node_count(),
                      selection.target.c_str());
  if (!filter_error.empty()) ImGui::TextColored(verdict_color(report::Verdict::Warn), "filter: %s", filter_error.c_str());
  if (rows_for_target != selection.target || rows_for_model != model.identity()) {
    rows_for_target = selection.target;
    rows_for_model = model.identity();
    rows_dirty = true;
  }

  // In a narrow window (the inspector view) the name keeps a readable width and the table scrolls sideways;
  // otherwise the name takes whatever room the figures leave.
  const float name_width = ImGui::GetFontSize() * 16;
  const bool narrow = ImGui::GetContentRegionAvail().x < ImGui::GetFontSize() * (model.fix() ? 76 : 62);
  ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortMulti | ImGuiTableFlags_RowBg |
                          ImGuiTableFlags_BordersOuter | ImGuiTableFlags_BordersV | ImGuiTableFlags_Resizable |
                          ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  if (narrow) flags |= ImGuiTableFlags_ScrollX;
  if (!ImGui::BeginTable("nodes", kColumns, flags)) return ImGui::End();
  ImGui::TableSetupScrollFreeze(1, 1);
  for (int c = 0; c < kColumns; ++c) {
    ImGuiTableColumnFlags column_flags =
        c == column_index(NodeColumn::Index) ? ImGuiTableColumnFlags_DefaultSort : ImGuiTableColumnFlags_None;
    float width = 0;
    const bool fix_column = c == column_index(NodeColumn::FixBefore) || c == column_index(NodeColumn::FixAfter);
    if (fix_column && !model.fix()) column_flags |= ImGuiTableColumnFlags_Disabled;
    if (c == column_index(NodeColumn::Name)) {
      column_flags |= narrow ? ImGuiTableColumnFlags_WidthFixed : ImGuiTableColumnFlags_WidthStretch;
      width = narrow ? name_width : 0;
    }
    ImGui::TableSetupColumn(kColumnSpecs[c].label, column_flags, width, static_cast<ImGuiID>(c));
  }
  // Headers by hand so that each explains its column on hover.
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0; c < kColumns; ++c) {
    if (!ImGui::TableSetColumnIndex(c)) continue;
    ImGui::TableHeader(kColumnSpecs[c].label);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kColumnSpecs[c].tooltip);
  }

  ImGuiTableSortSpecs* sort_specs = ImGui::TableGetSortSpecs();
  if (rows_dirty || (sort_specs && sort_specs->SpecsDirty)) {
    rebuild_rows(model, selection.target, sort_specs);
    if (sort_specs) sort_specs->SpecsDirty = false;
    rows_dirty = false;
  }
  if (step_to_next_hit) {
    step_to_next_hit = false;
    if (const int hit = next_hit(visible_rows, selection.node); hit >= 0) selection.select_node(hit);
  }

  // A selection made elsewhere scrolls its row into view (the clipper only draws visible rows, so scroll
  // by position rather than from inside the row).
  const float row_height = ImGui::GetTextLineHeight() + ImGui::GetStyle().CellPadding.y * 2;
  if (selection.node_changed_recently()) {
    const auto row = std::find(visible_rows.begin(), visible_rows.end(), selection.node);
    if (row != visible_rows.end()) {
      const float row_top = row_height * static_cast<float>(row - visible_rows.begin());
      const float view_height = ImGui::GetWindowHeight() - row_height * 2;
      if (row_top < ImGui::GetScrollY() || row_top > ImGui::GetScrollY() + view_height)
        ImGui::SetScrollY(std::max(0.0f, row_top - view_height / 2));
    }
  }

  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(visible_rows.size()), row_height);
  while (clipper.Step()) {
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const int index = visible_rows[static_cast<size_t>(row)];
      const report::NodeStats& node = model.node(index);
      const NodeFigures& f = view.nodes[static_cast<size_t>(index)];
      ImGui::TableNextRow();
      if (model.kept_by_fix(index)) {
        ImVec4 tint = fix_keep_color();
        tint.w = 0.22f;
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, ImGui::GetColorU32(tint));
      }
      // A node a running audit has not reached yet: greyed, its figures empty.
      if (f.unmeasured()) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ImGui::TableNextColumn();
      const std::string label = std::to_string(index);
      if (ImGui::Selectable(label.c_str(), index == selection.node, ImGuiSelectableFlags_SpanAllColumns))
        selection.select_node(index);
      if (selection.pins && ImGui::BeginPopupContextItem()) {
        pin_toggle(model, selection, {index}, "", false);
        ImGui::EndPopup();
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(node.name.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(node.op_type.c_str());
      ImGui::TableNextColumn();
      verdict_badge(f);
      fix_keep_tag(model, index);
      for (const NodeColumn fix_column : {NodeColumn::FixBefore, NodeColumn::FixAfter})
        if (ImGui::TableNextColumn())
          ImGui::TextUnformatted(format_sqnr(node_column_value(model, selection.target, index, fix_column)).c_str());
      ImGui::TableNextColumn();
      health_pills(node_health(node, selection.target));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(f.absmax).c_str());
      ImGui::TableNextColumn();
      if (f.headroom_bits < 0) ImGui::TextColored(verdict_color(report::Verdict::Unsafe), "%.1f", f.headroom_bits);
      else ImGui::TextUnformatted(format_number(f.headroom_bits, "%.1f").c_str());
      ImGui::TableNextColumn();
      if (f.overflow > 0) ImGui::TextColored(verdict_color(report::Verdict::Unsafe), "%lld", static_cast<long long>(f.overflow));
      else ImGui::TextDisabled("0");
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(f.flush_to_zero_percent, "%.2g").c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_sqnr(f.isolated_sqnr_db).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_sqnr(f.propagated_sqnr_db).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(f.propagated_cosine, "%.4f").c_str());
      if (f.unmeasured()) ImGui::PopStyleColor();
    }
  }
  ImGui::EndTable();
  ImGui::End();
}

}  // namespace mpa::ui
