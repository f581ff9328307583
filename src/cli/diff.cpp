// `mpaudit diff BASE.json NEW.json`: what changed between two reports (reports/diff.h), as text or as
// Markdown for a pull-request comment; with --fail-on-regression the exit code says whether NEW is worse.
#include "reports/diff.h"

#include <cmath>
#include <cstdio>

#include "cli/arg_groups.h"
#include "cli/commands.h"
#include "io/npy.h"

namespace mpa::cli {

namespace {

struct DiffArgs {
  std::string base, now, format = "text", output;
  report::DiffOptions options;
  bool fail_on_regression = false;
};

int diff(const DiffArgs& args) {
  require(args.format == "text" || args.format == "markdown", "--format must be text or markdown");
  require(args.options.sqnr_db > 0 && std::isfinite(args.options.sqnr_db), "--sqnr-db must be a positive number");
  require(args.options.ulp_ratio > 1 && std::isfinite(args.options.ulp_ratio), "--ulp-ratio must be above 1");
  if (!args.output.empty()) check_can_write(args.output);
  const report::Diff d = report::diff(report::read_report(args.base), report::read_report(args.now), args.options);
  const std::string text = args.format == "markdown" ? report::diff_markdown(d) : report::diff_text(d);
  if (args.output.empty()) std::fputs(text.c_str(), stdout);
  else write_file_atomic(args.output, text);
  return args.fail_on_regression && d.regressions() > 0 ? 1 : 0;
}

}  // namespace

Action add_diff(CLI::App& app) {
  auto a = std::make_shared<DiffArgs>();
  app.add_option("base", a->base, "the report to compare against (e.g. main's)")->required()->check(CLI::ExistingFile);
  app.add_option("new", a->now, "the report of the change")->required()->check(CLI::ExistingFile);
  app.add_option("--format", a->format, "text (default) or markdown (for a pull-request comment)");
  app.add_option("-o,--output", a->output, "write the diff here (atomically) instead of to stdout")
      ->check(kNonEmptyPath);
  app.add_option("--sqnr-db", a->options.sqnr_db, "list SQNR changes of at least this many dB (default 3)");
  app.add_option("--ulp-ratio", a->options.ulp_ratio,
                 "list a node's max ulp error when it changes by this factor (default 2)");
  app.add_flag("--fail-on-regression", a->fail_on_regression, "exit 1 when NEW is worse than BASE in any way listed");
  return [a] { return diff(*a); };
}

}  // namespace mpa::cli
