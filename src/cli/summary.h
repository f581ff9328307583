// The short human summary of a report (worst nodes, reasons, outputs, verdict line) and the exit code
// from its gates: 0 pass, 1 a gate failed; with `junit_path`, the gates and unsafe nodes as JUnit XML too.
// Shared by `audit` and `merge`.
#pragma once
#include <string>
#include <vector>

#include "reports/report.h"

namespace mpa::cli {

int finish_with_summary(const report::Report& report, const std::vector<std::string>& fail_on, bool quiet,
                        const std::string& junit_path = "");

}  // namespace mpa::cli
