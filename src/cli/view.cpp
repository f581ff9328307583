// `mpaudit view`: the dashboard over a report, or over a model audited live with the options of `mpaudit
// audit` (built only with Dear ImGui, GLFW and OpenGL; MPA_HAVE_UI).
#include <algorithm>
#include <filesystem>

#include "cli/audit_job.h"
#include "cli/commands.h"
#include "ui/dashboard.h"
#include "ui/tensors_dashboard.h"
#include "ui/tensors_model.h"

namespace mpa::cli {

namespace {

bool is_model_path(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return extension == ".onnx";
}

// The dashboard's audit: the job is made on the worker thread by the first run (a large model loads while
// the window is already up) and kept for the what-if re-runs.
ui::AuditRunner live_audit_runner(const AuditJobArgs& args) {
  auto job = std::make_shared<std::unique_ptr<AuditJob>>();
  return [args, job](const std::vector<std::string>& keep_fp32, const ui::AuditProgressFn& progress,
                     const std::atomic<bool>& cancel) {
    if (!*job) *job = std::make_unique<AuditJob>(args);
    return (*job)->run(keep_fp32, progress, &cancel).report;
  };
}

}  // namespace

Action add_view(CLI::App& app) {
  auto options = std::make_shared<ui::DashboardOptions>();
  auto audit_args = std::make_shared<AuditJobArgs>();
  auto view_text = std::make_shared<std::string>();
  auto metric_text = std::make_shared<std::string>();
  app.add_option("report", options->report_path,
                 "report written by `mpaudit audit --json`, `mpaudit merge` or `mpaudit tensors --json`, or an ONNX "
                 "model (.onnx) to audit in the window with the audit options below")
      ->required()
      ->check(CLI::ExistingFile);
  const size_t options_before_audit = app.get_options().size();
  add_audit_job_options(app, *audit_args);
  auto audit_options = std::make_shared<std::vector<const CLI::Option*>>();
  for (size_t i = options_before_audit; i < app.get_options().size(); ++i)
    audit_options->push_back(app.get_options()[i]);
  app.add_option("--fix", options->fix_path,
                 "a fix report (`mpaudit fix --json`) of the same model to show over the audit report: the keep-set "
                 "marked in the table and graph, per node its error with the whole model in the target format and "
                 "with the set, the gates before and after and the search's cost")
      ->check(CLI::ExistingFile);
  app.add_option("--screenshot", options->screenshot_path,
                 "render without interaction, save the window as PNG and exit (needs a display: xvfb-run); with a "
                 "model, once its audit has finished");
  app.add_option("--width", options->width, "window width in pixels")->check(CLI::Range(320, 8192));
  app.add_option("--height", options->height, "window height in pixels")->check(CLI::Range(240, 8192));
  app.add_option("--select", options->selected_node, "node shown in the inspector at start");
  app.add_option("--filter", options->node_filter, "initial node table filter, e.g. 'overflow>0' or 'MatMul iso.sqnr_db<40'");
  app.add_option("--font-scale", options->font_scale,
                 "scale fonts and sizes (default: the monitor's content scale, e.g. 2 on HiDPI)")
      ->check(CLI::Range(0.5, 4.0));
  app.add_option("--view", *view_text, "view shown at start: table (default), graph, inspector, histograms or card")
      ->check(CLI::IsMember({"table", "graph", "inspector", "histograms", "card"}));
  app.add_option("--colour-by", *metric_text,
                 "graph colour (and --export-node-data figure): verdict (default), iso.sqnr_db, prop.sqnr_db, headroom, "
                 "overflow, flush")
      ->check(CLI::IsMember({"verdict", "iso.sqnr_db", "prop.sqnr_db", "headroom", "overflow", "flush"}));
  app.add_flag("--expand-all", options->expand_all, "graph: open every name-scope group at start");
  app.add_flag("--fit-graph", options->fit_graph,
               "graph: start zoomed out to the whole graph (default: a large graph opens readable around the selection)");
  app.add_option("--bench-frames", options->bench_frames,
                 "once the view is settled, render N frames, print median/p95/max frame time and exit")
      ->check(CLI::Range(1, 100000));
  app.add_option("--export-node-data", options->export_node_data,
                 "write per-node figures of the first target as Model Explorer node data (JSON) and exit; no window");
  app.add_option("--graph-id", options->graph_id, "graph id in the node data file (default main_graph, torch.onnx's name)");
  return [options, audit_args, audit_options, view_text, metric_text] {
    if (!options->fix_path.empty() &&
        (is_model_path(options->report_path) || ui::is_tensors_report(options->report_path)))
      fail("--fix shows a fix report over the audit report of the same model (`mpaudit fix --audit-json`), not over " +
           options->report_path);
    if (ui::is_tensors_report(options->report_path)) {
      // A `mpaudit tensors` report has its own dashboard, which takes the window options only.
      for (const CLI::Option* option : *audit_options)
        if (option->count() > 0) fail(option->get_name() + " is an audit option: a tensors report takes none");
      return ui::run_tensors_dashboard({options->report_path, options->screenshot_path, options->width, options->height,
                                        options->font_scale, options->selected_node});
    }
    if (is_model_path(options->report_path)) {
      audit_args->model = options->report_path;
      options->audit = live_audit_runner(*audit_args);
      options->keep_fp32 = audit_args->keep_fp32;
    } else {
      for (const CLI::Option* option : *audit_options)
        if (option->count() > 0)
          fail(option->get_name() + " is an audit option: `mpaudit view` takes it with a model (.onnx), not a report");
    }
    if (!view_text->empty()) {
      options->view = *ui::parse_view(*view_text);
      options->view_given = true;
    }
    const std::pair<const char*, ui::GraphMetric> metrics[] = {
        {"verdict", ui::GraphMetric::Verdict},   {"iso.sqnr_db", ui::GraphMetric::IsolatedSqnr},
        {"prop.sqnr_db", ui::GraphMetric::PropagatedSqnr}, {"headroom", ui::GraphMetric::Headroom},
        {"overflow", ui::GraphMetric::Overflow}, {"flush", ui::GraphMetric::Flushed}};
    for (const auto& [name, metric] : metrics)
      if (*metric_text == name) options->graph_metric = metric;
    return ui::run_dashboard(*options);
  };
}

}  // namespace mpa::cli
