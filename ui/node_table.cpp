// Node table: every node in execution order with its figures against the selected target; sortable by
// each column (re-sorted only when ImGui marks the sort specs dirty or the rows change), filtered by a
// case-insensitive regex or substring over name and op type, drawn through ImGuiListClipper.
#include <algorithm>
#include <optional>
#include <regex>

#include "ui/panels.h"

namespace mpa::ui {

namespace {

enum Column { kIndex, kName, kOp, kVerdict, kAbsmax, kHeadroom, kOverflow, kFlushed, kIsolated, kPropagated, kCosine, kColumns };

struct ColumnSpec {
  const char* label;
  const char* tooltip;
};
constexpr ColumnSpec kColumnSpecs[kColumns] = {
    {"#", "execution order"},
    {"name", "node name"},
    {"op", "ONNX op type"},
    {"verdict", "against the selected target"},
    {"absmax", "largest |value| of the reference outputs"},
    {"headroom", "bits of range above absmax before the format's max finite value (negative: overflow)"},
    {"overflow", "reference values beyond the format's max finite value"},
    {"flush %", "nonzero reference values that round to zero in the format"},
    {"iso dB", "isolated SQNR: the node alone in the format, fed stored reference inputs"},
    {"prop dB", "propagated SQNR: the whole graph in the format"},
    {"cosine", "propagated cosine similarity to the reference"},
};
static_assert(sizeof kColumnSpecs / sizeof kColumnSpecs[0] == kColumns, "one spec per column");

// Sort key of a row for a column; NaN ("not measured") sorts after every number in either direction.
double numeric_key(const NodeFigures& f, int index, int column) {
  switch (column) {
    case kIndex: return index;
    case kVerdict: return static_cast<double>(f.verdict);
    case kAbsmax: return f.absmax;
    case kHeadroom: return f.headroom_bits;
    case kOverflow: return static_cast<double>(f.overflow);
    case kFlushed: return f.flush_to_zero_percent;
    case kIsolated: return f.isolated_sqnr_db;
    case kPropagated: return f.propagated_sqnr_db;
    case kCosine: return f.propagated_cosine;
    default: return 0;
  }
}

// Whether row a goes before row b under the given sort specs (ties fall back to execution order).
bool row_before(const ReportModel& model, const TargetView& view, const ImGuiTableSortSpecs& specs, int a, int b) {
  for (int s = 0; s < specs.SpecsCount; ++s) {
    const ImGuiTableColumnSortSpecs& spec = specs.Specs[s];
    const bool ascending = spec.SortDirection == ImGuiSortDirection_Ascending;
    if (spec.ColumnIndex == kName || spec.ColumnIndex == kOp) {
      const report::NodeStats &na = model.node(a), &nb = model.node(b);
      const int order = spec.ColumnIndex == kName ? na.name.compare(nb.name) : na.op_type.compare(nb.op_type);
      if (order != 0) return ascending ? order < 0 : order > 0;
      continue;
    }
    const double ka = numeric_key(view.nodes[static_cast<size_t>(a)], a, spec.ColumnIndex);
    const double kb = numeric_key(view.nodes[static_cast<size_t>(b)], b, spec.ColumnIndex);
    if (std::isnan(ka) != std::isnan(kb)) return std::isnan(kb);
    if (ka != kb && !std::isnan(ka)) return ascending ? ka < kb : ka > kb;
  }
  return a < b;
}

// The filter: a case-insensitive regex when the text is one, else a case-insensitive substring.
struct NameFilter {
  std::string lowered;
  std::optional<std::regex> pattern;
  explicit NameFilter(const char* text) : lowered(text) {
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    try {
      pattern.emplace(text, std::regex::icase | std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      pattern.reset();
    }
  }
  bool matches(const std::string& s) const {
    if (lowered.empty()) return true;
    if (pattern) return std::regex_search(s, *pattern);
    std::string l = s;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    return l.find(lowered) != std::string::npos;
  }
};

}  // namespace

void NodeTablePanel::rebuild_rows(const ReportModel& model, const TargetView& view, const ImGuiTableSortSpecs* sort_specs) {
  const NameFilter filter(filter_text);
  visible_rows.clear();
  for (int i = 0; i < model.node_count(); ++i)
    if (filter.matches(model.node(i).name) || filter.matches(model.node(i).op_type)) visible_rows.push_back(i);
  if (sort_specs && sort_specs->SpecsCount > 0)
    std::stable_sort(visible_rows.begin(), visible_rows.end(),
                     [&](int a, int b) { return row_before(model, view, *sort_specs, a, b); });
}

void NodeTablePanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Nodes", open)) return ImGui::End();
  if (selection.target.empty()) return ImGui::End();
  const TargetView& view = model.target_view(selection.target);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
  if (ImGui::InputTextWithHint("##filter", "filter name / op (regex)", filter_text, sizeof filter_text)) rows_dirty = true;
  ImGui::SameLine();
  ImGui::TextDisabled("%d of %d nodes, %s", static_cast<int>(visible_rows.size()), model.node_count(),
                      selection.target.c_str());
  if (rows_for_target != selection.target) {
    rows_for_target = selection.target;
    rows_dirty = true;
  }

  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortMulti | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersOuter | ImGuiTableFlags_BordersV | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("nodes", kColumns, flags)) return ImGui::End();
  ImGui::TableSetupScrollFreeze(0, 1);
  for (int c = 0; c < kColumns; ++c) {
    ImGuiTableColumnFlags column_flags = c == kIndex ? ImGuiTableColumnFlags_DefaultSort : ImGuiTableColumnFlags_None;
    if (c == kName) column_flags |= ImGuiTableColumnFlags_WidthStretch;
    ImGui::TableSetupColumn(kColumnSpecs[c].label, column_flags, 0, static_cast<ImGuiID>(c));
  }
  // Headers by hand so that each explains its column on hover.
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0; c < kColumns; ++c) {
    ImGui::TableSetColumnIndex(c);
    ImGui::TableHeader(kColumnSpecs[c].label);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kColumnSpecs[c].tooltip);
  }

  ImGuiTableSortSpecs* sort_specs = ImGui::TableGetSortSpecs();
  if (rows_dirty || (sort_specs && sort_specs->SpecsDirty)) {
    rebuild_rows(model, view, sort_specs);
    if (sort_specs) sort_specs->SpecsDirty = false;
    rows_dirty = false;
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
      ImGui::TableNextColumn();
      const std::string label = std::to_string(index);
      if (ImGui::Selectable(label.c_str(), index == selection.node, ImGuiSelectableFlags_SpanAllColumns))
        selection.select_node(index);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(node.name.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(node.op_type.c_str());
      ImGui::TableNextColumn();
      verdict_badge(f.verdict);
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
    }
  }
  ImGui::EndTable();
  ImGui::End();
}

}  // namespace mpa::ui
