// A report as one self-contained HTML page that opens offline (`audit --html`, `mpaudit html`): inline
// CSS, JavaScript and SVG, the report's figures as JSON inside it, and a Content-Security-Policy that
// forbids every network request. It shows the report card per target, alerts linking to the first bad
// node, divergence along depth, a sortable and filterable node table, and per node its reasons and
// exponent histograms (reference and propagated) with the format's windows.
#pragma once
#include <string>

#include "reports/report.h"

namespace mpa::report {

std::string html_report(const Report& report);

}  // namespace mpa::report
