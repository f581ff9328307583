// The dashboard's panels, in the shape of Dear ImGui's demo: each is a struct holding its own view state
// with Draw(const ReportModel&, DashboardSelection&, bool* open), implemented in ui/<panel>.cpp. Panels
// read the report model only; the selection is how a click in one panel moves the others.
//
// To add a panel: declare its struct here, implement it in its own file, and draw it in the views that show
// it in ui/dashboard.cpp's draw_view (which also places it), holding its state in dashboard.cpp's Session.
#pragma once
#include <imgui.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probes/exp_histogram.h"
#include "ui/graph_model.h"
#include "ui/live_audit.h"
#include "ui/report_model.h"
#include "ui/view_model.h"

namespace mpa::ui {

// Model, target format selector, verdict badge, node counts, run settings and thresholds in force.
struct HeaderPanel {
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
};

// First overflow, first NaN/Inf, first unsafe node and the first error jump; a click selects the node.
struct AlertsPanel {
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
};

// Isolated and propagated SQNR along execution order, with the target's thresholds; a click selects.
struct DivergencePlotPanel {
  bool show_isolated = true, show_propagated = true;
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
};

// Every node in execution order, sortable by each column and filtered (ui/view_model.h's filter language).
struct NodeTablePanel {
  char filter_text[128] = "";
  std::string filter_error;       // why the filter text does not parse; empty when it does
  bool step_to_next_hit = false;  // Enter in the filter box: select the next visible row once rows are current
  std::vector<int> visible_rows;  // node indices that pass the filter, in the current sort order
  std::string rows_for_target;    // the target the rows were sorted for (figures differ per target)
  uint64_t rows_for_model = 0;    // and the model's identity (a running audit's snapshots replace it)
  bool rows_dirty = true;         // re-filter and re-sort: filter text or target changed
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);

 private:
  void rebuild_rows(const ReportModel& model, const std::string& target, const ImGuiTableSortSpecs* sort_specs);
};

// Everything about the selected node: reasons, each output's exponent histogram inside the format's window,
// reference statistics, propagated vs isolated metrics, weights' format fit, links to neighbours.
struct NodeInspectorPanel {
  bool log_counts = true;  // histogram bar heights on a log scale: a few overflowing values stay visible
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
};

// The graph: nodes laid out in layers on a worker thread, collapsed by name scope (groups show their worst
// bin and a verdict bar), coloured by a metric with a legend; pan, zoom, click to select or open a group.
struct GraphPanel {
  GraphMetric metric = GraphMetric::Verdict;
  bool expand_all_at_start = false;  // open every group on the first layout (else: as many as stay readable)
  bool fit_all_at_start = false;     // start zoomed out to the whole graph (else: readable, around the selection)
  GraphPanel();
  ~GraphPanel();  // stops the layout worker
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
  // A layout is running or none has landed yet (a screenshot waits for it; frames never do).
  bool layout_pending() const;
  // Items in the last layout that landed and its time from start to the frame that showed it (ms).
  std::pair<int, double> last_layout() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One screen summary: gate result and verdict counts per format, model facts, the selected format's top
// culprits, first unsafe node and first error jump, error along execution order, verdicts by op type.
struct ReportCardPanel {
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
};

// Every node's exponent histogram as one row of a heat map along execution order, inside the format's
// window (flush, subnormal, normal, overflow); hover for counts, click to select.
struct HistogramsPanel {
  bool show_propagated = false;  // the propagated run's histograms instead of the reference's
  bool per_row_scale = true;     // each row scaled to its own largest bin (else one scale for all)
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);

 private:
  std::vector<std::vector<int64_t>> rows_;  // per node: its outputs' histograms summed (ExpHistogram bins)
  std::string rows_key_;                    // target and run the rows were summed for
  uint64_t rows_model_ = 0;                 // and the model's identity
  int last_selection_ = -1;
};

// What-if (`mpaudit view MODEL.onnx` only): the audit's progress or its error, the nodes pinned to FP32 with
// a Copy button, and what the last re-run changed.
struct WhatIfPanel {
  AuditStatus status;                // the dashboard's audit, as of this frame
  std::vector<std::string> changes;  // what_if_changes() between the last two finished runs
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
};

// A fix report over the audit (`view --fix`): gates before and after, the kept nodes and why, the recipes,
// the cost; empty without one.
struct FixPanel {
  void Draw(const ReportModel& model, DashboardSelection& selection, bool* open);
};

// [SECTION] Shared look: one place for the verdict colours and number formatting every panel uses.
ImVec4 verdict_color(report::Verdict verdict);
void verdict_badge(report::Verdict verdict);  // coloured SAFE/WARN/UNSAFE text
// A format's gate result as a PASS/FAIL badge; "[auditing]" while a running audit's report is partial.
void gate_badge(const ReportModel& model, bool pass);
// The node's verdict, "pending" in grey while a running audit has not reached it, and an FP32 tag where the
// target's runs computed it in FP32.
void verdict_badge(const NodeFigures& figures);
// A fix report's keep-set (`view --fix`): its colour (no verdict colour), why a kept node is needed (the gates
// that fail without it), and a KEEP tag after the previous item, the reason on hover (nothing for other nodes).
ImVec4 fix_keep_color();
std::string kept_because(const report::KeptNode& kept);
void fix_keep_tag(const ReportModel& model, int node_index);
// "%.3g", or "-" for NaN (not measured), "inf"/"-inf" as they are.
std::string format_number(double value, const char* format = "%.3g");
// SQNR in dB: "exact" at the report's cap (no error at all), "-" when not measured.
std::string format_sqnr(double sqnr_db);
// A node's value health as small pills, each a letter on a colour (never colour alone): N NaN, I Inf or
// overflow, s subnormal, f flushed, n normal; a pill only for a nonzero count, its count on hover.
void health_pills(const ValueHealth& health);
// An exponent histogram (probes::ExpHistogram bins over 2^-40..2^41) with the format's zones behind the bars.
// `overlay` (counts may be null) is drawn as narrow bars on top. With a scale, the zones are where values
// land once multiplied by 2^scale_log2, and the safe scale window's edges are drawn as dashed lines.
struct HistogramSeries {
  const probes::ExpHistogram* counts = nullptr;
  const char* label = "";
};
struct HistogramScale {
  int scale_log2 = 0;
  std::optional<int> window_lo_log2, window_hi_log2;
};
void exponent_histogram(const char* id, const HistogramSeries& main, const HistogramSeries& overlay,
                        std::optional<Format> format, bool log_counts, const HistogramScale& scale = {});
// A titled separator inside a panel (ImGui 1.86 has no SeparatorText).
void section_title(const char* title);
// A link to a node: the node's name as a small button that selects it.
void node_link(const ReportModel& model, DashboardSelection& selection, int node_index);
// A running audit's progress: node runs done of all, elapsed time and ETA, over a bar `width` wide.
void audit_progress(const AuditStatus& status, float width);
// What-if only (nothing otherwise): a menu item, or a small button, that pins the top-level owners of
// `nodes` to FP32 or unpins them; `what` names them in the label (empty: the single node's owner).
void pin_toggle(const ReportModel& model, DashboardSelection& selection, const std::vector<int>& nodes,
                std::string what, bool as_button);

}  // namespace mpa::ui
