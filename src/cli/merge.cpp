#include "audit/verdict.h"
#include "cli/arg_groups.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/summary.h"
#include "io/npy.h"
#include "model/loader.h"

namespace mpa::cli {

namespace {

struct MergeArgs {
  std::vector<std::string> reports;
  std::string output, junit_path;
  std::vector<std::string> fail_on;
  bool quiet = false;
  double progress_every = Progress::kLinePeriod;
};

int merge(const MergeArgs& args) {
  require(args.reports.size() >= 2, "merge needs at least two reports");
  check_can_write(args.output);
  if (!args.junit_path.empty()) check_can_write(args.junit_path);
  report::Report merged = report::read_report(args.reports.front(), true);
  std::vector<std::string> outputs = report::graph_outputs(merged);
  Progress progress(!args.quiet, "merge", "reports", args.progress_every);
  const int64_t total = static_cast<int64_t>(args.reports.size());
  progress.show(1, total);
  for (size_t i = 1; i < args.reports.size(); ++i) {
    progress.show(static_cast<int64_t>(i) + 1, total);
    try {
      const report::Report next = report::read_report(args.reports[i], true);
      if (outputs.empty()) outputs = report::graph_outputs(next);
      merged.merge(next);
    } catch (const Error& e) {
      const std::string message = e.what();
      if (message.rfind(args.reports[i], 0) == 0) throw;
      fail(args.reports[i] + ": " + message);
    }
  }
  evaluate(merged, outputs);
  report::write_report(args.output, merged);
  return finish_with_summary(merged, args.fail_on, args.quiet, args.junit_path);
}

}  // namespace

Action add_merge(CLI::App& app) {
  auto a = std::make_shared<MergeArgs>();
  app.add_option("reports", a->reports, "reports of the same model and settings, made on different samples")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", a->output, "merged report")->required()->check(kNonEmptyPath);
  app.add_option("--fail-on", a->fail_on, "gates, as for audit");
  app.add_option("--junit", a->junit_path, "write the gates and unsafe nodes here as JUnit XML (atomically)")
      ->check(kNonEmptyPath);
  app.add_flag("--quiet", a->quiet, "no progress and no summary; the exit code still tells");
  app.add_option("--progress-every", a->progress_every,
                 "seconds between progress lines when stderr is not a terminal (default 10)")
      ->check(CLI::Range(0.0, 86400.0));
  return [a] { return merge(*a); };
}

}  // namespace mpa::cli
