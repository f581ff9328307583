// Window-free logic behind the dashboard's panels: the node table's filter language, sort order and hit
// stepping, a node's value-health counts, where the inspector's histogram places the format's zones, the
// dashboard's view names and where its settings are kept. Nothing here touches ImGui, so
// tests/ui/test_view_model.cpp and tests/ui/test_graph_model.cpp check it without a window.
#pragma once
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "ui/report_model.h"

namespace mpa::ui {

// The node table's columns, in display order; FixBefore and FixAfter (a fix report's SQNR of the node with
// the whole model in the target format and with the keep-set) only with a fix report; Time and FixKept (1 for
// the fix's keep-set, else 0) are filter fields only (no column of their own).
enum class NodeColumn {
  Index,
  Name,
  Op,
  Verdict,
  FixBefore,
  FixAfter,
  Health,
  Absmax,
  Headroom,
  Overflow,
  Flushed,
  Isolated,
  Propagated,
  Cosine,
  Time,
  FixKept
};

// A column's numeric value for a node against a target: NaN when not measured (Name and Op have none).
double node_column_value(const ReportModel& model, const std::string& target, int node, NodeColumn column);

// The filter: terms separated by spaces, all of which must hold. A term is either a numeric predicate
// `FIELD OP NUMBER` (fields: index absmax headroom overflow flush iso.sqnr_db prop.sqnr_db cosine time, and
// with a fix report fix.kept fix.before.sqnr_db fix.after.sqnr_db;
// ops: > >= < <= == !=) or a case-insensitive regex over name and op type, falling back to a substring
// when it is no valid regex. A malformed predicate leaves `error` set and the filter matching nothing.
class NodeFilter {
 public:
  static NodeFilter parse(std::string_view text);
  bool matches(const ReportModel& model, const std::string& target, int node) const;
  const std::string& error() const { return error_; }

 private:
  enum class Comparison { Greater, GreaterEqual, Less, LessEqual, Equal, NotEqual };
  struct Predicate {
    NodeColumn field;
    Comparison comparison;
    double number;
  };
  struct TextTerm {
    std::string lowered;              // for the substring fallback
    std::optional<std::regex> regex;  // absent when the term is no valid regex
    bool matches(const std::string& s) const;
  };
  std::vector<Predicate> predicates_;
  std::vector<TextTerm> text_terms_;
  std::string error_;
};

struct SortKey {
  NodeColumn column;
  bool ascending;
};

// The nodes that pass the filter, stably sorted by the keys in priority order (ties keep execution order);
// nodes missing a value (NaN) go after all others whichever the direction.
std::vector<int> filtered_sorted_rows(const ReportModel& model, const std::string& target, const NodeFilter& filter,
                                      const std::vector<SortKey>& keys);

// The hit after `current` in `rows`, wrapping to the first; the first when `current` is no hit; -1 when
// there are none.
int next_hit(const std::vector<int>& rows, int current);

// How a node's reference output values sit in the target format, summed over its measured outputs.
struct ValueHealth {
  int64_t nan = 0;
  int64_t inf_or_overflow = 0;  // +-Inf already in the reference, or finite but beyond the format's max
  int64_t subnormal = 0, flushed = 0, normal = 0;
};
ValueHealth node_health(const report::NodeStats& node, const std::string& target);

// The format's zones on the log2 |x| axis: below flush_log2 values round to zero, below normal_log2 they are
// subnormal, above max_log2 they overflow.
struct FormatZones {
  double flush_log2, normal_log2, max_log2;
};
FormatZones format_zones(Format format);

// The dashboard's views: each a set of panels on one screen (`mpaudit view --view NAME`).
enum class DashboardView { Table, Graph, Inspector, Histograms, Card };
inline constexpr DashboardView kDashboardViews[] = {DashboardView::Table, DashboardView::Graph, DashboardView::Inspector,
                                                    DashboardView::Histograms, DashboardView::Card};
const char* view_name(DashboardView view);  // "table", "graph", ...
std::optional<DashboardView> parse_view(std::string_view name);

// Where the window layout is kept between runs: $XDG_CONFIG_HOME/mpaudit/imgui.ini, else
// $HOME/.config/mpaudit/imgui.ini; nullopt when neither is set (nothing is kept). Either may be null.
std::optional<std::filesystem::path> settings_file(const char* xdg_config_home, const char* home);

}  // namespace mpa::ui
