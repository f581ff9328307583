#include "ui/view_model.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "probes/format_fit.h"

namespace mpa::ui {

double node_column_value(const ReportModel& model, const std::string& target, int node, NodeColumn column) {
  const NodeFigures& f = model.target_view(target).nodes[static_cast<size_t>(node)];
  switch (column) {
    case NodeColumn::Index: return node;
    case NodeColumn::Verdict: return f.unmeasured() ? NAN : static_cast<double>(f.verdict);
    case NodeColumn::Health: {
      // Sorts the nodes with the most broken values (NaN, Inf, overflow) together.
      const ValueHealth h = node_health(model.node(node), target);
      return static_cast<double>(h.nan + h.inf_or_overflow);
    }
    case NodeColumn::Absmax: return f.absmax;
    case NodeColumn::Headroom: return f.headroom_bits;
    case NodeColumn::Overflow: return static_cast<double>(f.overflow);
    case NodeColumn::Flushed: return f.flush_to_zero_percent;
    case NodeColumn::Isolated: return f.isolated_sqnr_db;
    case NodeColumn::Propagated: return f.propagated_sqnr_db;
    case NodeColumn::Cosine: return f.propagated_cosine;
    case NodeColumn::Time: return model.node(node).time_ms_total;
    case NodeColumn::FixKept: return model.fix() ? double(model.kept_by_fix(node) != nullptr) : NAN;
    case NodeColumn::FixBefore: {
      const report::FixNode* fix = model.fix_figures(node);
      return fix ? fix->before.sqnr_db : NAN;
    }
    case NodeColumn::FixAfter: {
      const report::FixNode* fix = model.fix_figures(node);
      return fix && fix->after ? fix->after->sqnr_db : NAN;
    }
    case NodeColumn::Name:
    case NodeColumn::Op: break;
  }
  return NAN;
}

namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

struct FieldName {
  std::string_view name;
  NodeColumn column;
};
constexpr FieldName kFieldNames[] = {
    {"index", NodeColumn::Index},
    {"absmax", NodeColumn::Absmax},
    {"headroom", NodeColumn::Headroom},
    {"overflow", NodeColumn::Overflow},
    {"flush", NodeColumn::Flushed},
    {"iso.sqnr_db", NodeColumn::Isolated},
    {"prop.sqnr_db", NodeColumn::Propagated},
    {"cosine", NodeColumn::Cosine},
    {"time", NodeColumn::Time},
    {"fix.kept", NodeColumn::FixKept},
    {"fix.before.sqnr_db", NodeColumn::FixBefore},
    {"fix.after.sqnr_db", NodeColumn::FixAfter},
};

}  // namespace

bool NodeFilter::TextTerm::matches(const std::string& s) const {
  if (regex) return std::regex_search(s, *regex);
  return lowercase(s).find(lowered) != std::string::npos;
}

NodeFilter NodeFilter::parse(std::string_view text) {
  // A term that starts with a field-like word directly followed by a comparison is meant as a predicate,
  // so a typo in it is reported rather than silently searched for as a name.
  static const std::regex predicate_shape(R"(^([A-Za-z_][A-Za-z0-9_.]*)(>=|<=|==|!=|>|<)(.*)$)");
  NodeFilter filter;
  std::istringstream terms{std::string(text)};
  for (std::string term; terms >> term;) {
    std::smatch parts;
    if (!std::regex_match(term, parts, predicate_shape)) {
      TextTerm text_term{lowercase(term), std::nullopt};
      try {
        text_term.regex.emplace(term, std::regex::icase | std::regex::ECMAScript);
      } catch (const std::regex_error&) {
      }
      filter.text_terms_.push_back(std::move(text_term));
      continue;
    }
    const std::string field = lowercase(parts[1].str()), op = parts[2].str(), number_text = parts[3].str();
    const auto named = std::find_if(std::begin(kFieldNames), std::end(kFieldNames),
                                    [&](const FieldName& f) { return f.name == field; });
    if (named == std::end(kFieldNames)) {
      filter.error_ = "unknown field '" + parts[1].str() +
                      "' (index absmax headroom overflow flush iso.sqnr_db prop.sqnr_db cosine time fix.kept "
                      "fix.before.sqnr_db fix.after.sqnr_db)";
      break;
    }
    char* end = nullptr;
    const double number = std::strtod(number_text.c_str(), &end);
    if (number_text.empty() || end != number_text.c_str() + number_text.size()) {
      filter.error_ = "'" + term + "': expected a number after " + op;
      break;
    }
    const Comparison comparison = op == ">"    ? Comparison::Greater
                                  : op == ">=" ? Comparison::GreaterEqual
                                  : op == "<"  ? Comparison::Less
                                  : op == "<=" ? Comparison::LessEqual
                                  : op == "==" ? Comparison::Equal
                                               : Comparison::NotEqual;
    filter.predicates_.push_back({named->column, comparison, number});
  }
  return filter;
}

bool NodeFilter::matches(const ReportModel& model, const std::string& target, int node) const {
  if (!error_.empty()) return false;
  for (const Predicate& p : predicates_) {
    const double value = node_column_value(model, target, node, p.field);
    if (std::isnan(value)) return false;  // not measured: no comparison holds
    bool holds = false;
    switch (p.comparison) {
      case Comparison::Greater: holds = value > p.number; break;
      case Comparison::GreaterEqual: holds = value >= p.number; break;
      case Comparison::Less: holds = value < p.number; break;
      case Comparison::LessEqual: holds = value <= p.number; break;
      case Comparison::Equal: holds = value == p.number; break;
      case Comparison::NotEqual: holds = value != p.number; break;
    }
    if (!holds) return false;
  }
  const report::NodeStats& stats = model.node(node);
  return std::all_of(text_terms_.begin(), text_terms_.end(),
                     [&](const TextTerm& t) { return t.matches(stats.name) || t.matches(stats.op_type); });
}

std::vector<int> filtered_sorted_rows(const ReportModel& model, const std::string& target, const NodeFilter& filter,
                                      const std::vector<SortKey>& keys) {
  std::vector<int> rows;
  for (int i = 0; i < model.node_count(); ++i)
    if (filter.matches(model, target, i)) rows.push_back(i);
  const auto before = [&](int a, int b) {
    for (const SortKey& key : keys) {
      if (key.column == NodeColumn::Name || key.column == NodeColumn::Op) {
        const report::NodeStats &na = model.node(a), &nb = model.node(b);
        const int order = key.column == NodeColumn::Name ? na.name.compare(nb.name) : na.op_type.compare(nb.op_type);
        if (order != 0) return key.ascending ? order < 0 : order > 0;
        continue;
      }
      const double va = node_column_value(model, target, a, key.column);
      const double vb = node_column_value(model, target, b, key.column);
      if (std::isnan(va) != std::isnan(vb)) return std::isnan(vb);
      if (va != vb && !std::isnan(va)) return key.ascending ? va < vb : va > vb;
    }
    return false;  // equal under every key: stable_sort keeps execution order
  };
  std::stable_sort(rows.begin(), rows.end(), before);
  return rows;
}

int next_hit(const std::vector<int>& rows, int current) {
  if (rows.empty()) return -1;
  const auto at = std::find(rows.begin(), rows.end(), current);
  if (at == rows.end() || at + 1 == rows.end()) return rows.front();
  return *(at + 1);
}

ValueHealth node_health(const report::NodeStats& node, const std::string& target) {
  ValueHealth health;
  for (const report::TensorStats& tensor : node.tensors) {
    if (!tensor.measured) continue;
    health.nan += tensor.hist.counts[probes::ExpHistogram::kNan];
    health.inf_or_overflow += tensor.hist.counts[probes::ExpHistogram::kInf];
    const auto t = tensor.targets.find(target);
    if (t == tensor.targets.end()) continue;
    const probes::FormatFit& fit = t->second.fit;
    health.inf_or_overflow += fit.overflow;
    health.subnormal += fit.subnormal;
    health.flushed += fit.flush_to_zero;
    health.normal += fit.nonzero - fit.overflow - fit.flush_to_zero - fit.subnormal;
  }
  return health;
}

FormatZones format_zones(Format format) {
  const probes::FormatFit::Bounds bounds(format);
  return {std::log2(bounds.flush_limit), std::log2(format_traits(format).min_normal), std::log2(bounds.max_finite)};
}

const char* view_name(DashboardView view) {
  switch (view) {
    case DashboardView::Table: return "table";
    case DashboardView::Graph: return "graph";
    case DashboardView::Inspector: return "inspector";
    case DashboardView::Histograms: return "histograms";
    case DashboardView::Card: return "card";
  }
  return "table";
}

std::optional<DashboardView> parse_view(std::string_view name) {
  for (DashboardView view : kDashboardViews)
    if (name == view_name(view)) return view;
  return std::nullopt;
}

std::optional<std::filesystem::path> settings_file(const char* xdg_config_home, const char* home) {
  // The XDG base directory spec ignores a relative $XDG_CONFIG_HOME.
  if (xdg_config_home && *xdg_config_home && std::filesystem::path(xdg_config_home).is_absolute())
    return std::filesystem::path(xdg_config_home) / "mpaudit" / "imgui.ini";
  if (home && *home) return std::filesystem::path(home) / ".config" / "mpaudit" / "imgui.ini";
  return std::nullopt;
}

}  // namespace mpa::ui
