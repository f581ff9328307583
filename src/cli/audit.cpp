// `mpaudit audit`: the audit job (cli/audit_job.h) with a progress bar on the terminal, the report written as
// JSON, a short summary and the gates' exit code.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "audit/advice.h"
#include "cli/arg_groups.h"
#include "cli/audit_job.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/summary.h"
#include "io/npy.h"
#include "reports/html.h"

namespace mpa::cli {

namespace {

struct AuditArgs {
  AuditJobArgs job;
  std::string json_path, junit_path, html_path;
  std::vector<std::string> fail_on;
  bool quiet = false;
  bool no_verify = false;
  double progress_every = Progress::kLinePeriod;
};

int audit(const AuditArgs& args) {
  const AuditJob job(args.job);
  job.check_gates(args.fail_on);
  if (!args.json_path.empty()) check_can_write(args.json_path);
  if (!args.junit_path.empty()) check_can_write(args.junit_path);
  if (!args.html_path.empty()) check_can_write(args.html_path);
  Progress bar(!args.quiet, "audit", "node runs", args.progress_every);
  AuditRun run =
      job.run(args.job.keep_fp32, [&](int64_t done, int64_t total, const auto&) { bar.show(done, total); });
  const auto verifying = std::chrono::steady_clock::now();
  if (!args.no_verify)
    verify_advice(run.report, [&](const std::vector<std::string>& keep, const std::string& format) {
      if (!args.quiet)
        std::fprintf(stderr, "verifying the %s advice: auditing again with %zu node%s kept in fp32\n", format.c_str(),
                     keep.size(), keep.size() == 1 ? "" : "s");
      Progress again(!args.quiet, "verifying " + format + " advice", "node runs", args.progress_every);
      return job.run(keep, [&](int64_t done, int64_t total, const auto&) { again.show(done, total); }, nullptr, format)
          .report;
    });
  const double advice_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - verifying).count();
  const auto writing = std::chrono::steady_clock::now();
  if (!args.json_path.empty()) report::write_report(args.json_path, run.report);
  if (!args.html_path.empty()) write_file_atomic(args.html_path, report::html_report(run.report));
  const double report_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - writing).count();
  // execute_ms holds reference_ms and isolated_ms (the node runs of each pass); the others add to it.
  if (args.job.timing)
    std::printf(
        "audit-timing: total_ms=%.3f execute_ms=%.3f convert_ms=%.3f probes_ms=%.3f reference_ms=%.3f "
        "consequences_ms=%.3f advice_ms=%.3f isolated_ms=%.3f report_ms=%.3f\n",
        run.total_ms, 1e3 * run.time_split.execute, 1e3 * run.time_split.convert, 1e3 * run.time_split.probes,
        1e3 * run.time_split.reference, 1e3 * run.time_split.consequences, advice_ms, 1e3 * run.time_split.isolated,
        report_ms);
  return finish_with_summary(run.report, args.fail_on, args.quiet, args.junit_path);
}

}  // namespace

Action add_audit(CLI::App& app) {
  auto a = std::make_shared<AuditArgs>();
  app.add_option("model", a->job.model, "ONNX model file")->required();
  add_audit_job_options(app, a->job);
  app.add_option("--json", a->json_path, "write the JSON report here (atomically)")->check(kNonEmptyPath);
  app.add_option("--html", a->html_path, "write the report as one self-contained HTML page (atomically)")
      ->check(kNonEmptyPath);
  app.add_option("--junit", a->junit_path,
                 "write the gates and unsafe nodes here as JUnit XML, for CI test reports (atomically)")
      ->check(kNonEmptyPath);
  app.add_option("--fail-on", a->fail_on,
                 "gate, e.g. 'unsafe_nodes>0' or 'output.max_rel_err>1e-2' (repeatable; "
                 "default: fail when any node is unsafe)");
  app.add_flag("--quiet", a->quiet, "no progress bar and no summary; the exit code still tells");
  app.add_option("--progress-every", a->progress_every,
                 "seconds between progress lines when stderr is not a terminal (default 10)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--no-verify-advice", a->no_verify,
               "skip re-auditing a failing target with its keep-fp32 advice applied (the advice is then "
               "reported as not verified)");
  return [a] { return audit(*a); };
}

}  // namespace mpa::cli
