// `mpaudit html REPORT.json -o OUT.html`: a report as one self-contained page (reports/html.h).
#include "reports/html.h"

#include "cli/arg_groups.h"
#include "cli/commands.h"
#include "io/npy.h"

namespace mpa::cli {

Action add_html(CLI::App& app) {
  struct HtmlArgs {
    std::string report, output;
  };
  auto a = std::make_shared<HtmlArgs>();
  app.add_option("report", a->report, "an audit report (JSON)")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", a->output, "the page to write (atomically)")->required()->check(kNonEmptyPath);
  return [a] {
    check_can_write(a->output);
    write_file_atomic(a->output, report::html_report(report::read_report(a->report)));
    return 0;
  };
}

}  // namespace mpa::cli
