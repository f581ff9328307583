// The dashboard: a Dear ImGui window on GLFW + OpenGL 3 that shows one audit report in five views (table,
// graph, inspector, histograms, report card). Interactive by default; with a screenshot path it renders a few
// frames of one view, saves the window as PNG and returns; with bench_frames it times frames and returns.
// Given a model and an audit runner instead of a report, it runs the audit on a worker thread and fills the
// views as results arrive, with what-if re-runs of nodes pinned to FP32 (ui/live_audit.h).
#pragma once
#include <string>

#include "ui/graph_model.h"
#include "ui/live_audit.h"
#include "ui/view_model.h"

namespace mpa::ui {

struct DashboardOptions {
  std::string report_path;             // a report, or the model that `audit` audits
  AuditRunner audit;                   // set: report_path is a model, audited on a worker thread (`view MODEL.onnx`)
  std::vector<std::string> keep_fp32;  // with `audit`: the nodes pinned to FP32 in the first run
  std::string fix_path;                // a fix report shown over the report (not with `audit`)
  std::string screenshot_path;  // empty: interactive
  int width = 1400, height = 900;
  std::string selected_node;    // preselected in the inspector (empty: the first unsafe node, if any)
  std::string node_filter;      // initial node table filter (ui/view_model.h's language); cut to the box's size
  DashboardView view = DashboardView::Table;
  bool view_given = false;      // shown even where the saved window layout was for another view
  GraphMetric graph_metric = GraphMetric::Verdict;
  bool expand_all = false;      // graph: open every name-scope group at start
  bool fit_graph = false;       // graph: start zoomed out to the whole graph
  float font_scale = 0;          // fonts and sizes scaled by this (0: the monitor's content scale, for HiDPI)
  int bench_frames = 0;         // > 0: once the graph is laid out, render this many frames, print their times, exit
  std::string export_node_data;  // write Model Explorer node data for the first target and graph_metric, exit
  std::string graph_id = "main_graph";  // the graph id in that file (torch.onnx names its graph main_graph)
};

// Returns the process exit code (0). Fails with mpa::Error when the report cannot be read, the node to
// select does not exist, there is no display, or the screenshot cannot be written; headless, also when the
// audit fails (interactive runs show its error in the window).
int run_dashboard(const DashboardOptions& options);

}  // namespace mpa::ui
