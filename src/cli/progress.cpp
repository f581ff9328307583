#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace mpa::cli {

Progress::Progress(bool enabled, std::string what, std::string unit, double line_period)
    : enabled_(enabled),
      terminal_(::isatty(2) != 0),
      what_(std::move(what)),
      unit_(std::move(unit)),
      start_(clock::now()),
      line_period_(line_period),
      next_line_(line_period) {}

void Progress::show(int64_t done, int64_t total) {
  if (!enabled_ || done == 0) return;
  const int64_t whole = std::max<int64_t>(total, 1);
  const int percent = static_cast<int>(100 * done / whole);
  if (terminal_) {
    // Redrawn every 16 steps and at the end: cheap enough for per-node calls.
    if (done % 16 != 0 && done != total) return;
    const double elapsed = std::chrono::duration<double>(clock::now() - start_).count();
    const double eta = elapsed * static_cast<double>(total - done) / static_cast<double>(done);
    const int width = 30, filled = static_cast<int>(width * done / whole);
    std::fprintf(stderr, "\r[%.*s%*s] %3d%%  %.1fs elapsed, ETA %.1fs ", filled, "##############################",
                 width - filled, "", percent, elapsed, eta);
    if (done == total) std::fprintf(stderr, "\n");
    return;
  }
  const double elapsed = std::chrono::duration<double>(clock::now() - start_).count();
  if (elapsed < next_line_ && !(done == total && printed_)) return;
  next_line_ = elapsed + line_period_;
  printed_ = true;
  const double eta = elapsed * static_cast<double>(total - done) / static_cast<double>(done);
  std::fprintf(stderr, "%s: %d%% (%lld of %lld %s), %.0fs elapsed, ETA %.0fs\n", what_.c_str(), percent,
               static_cast<long long>(done), static_cast<long long>(total), unit_.c_str(), elapsed, eta);
}

}  // namespace mpa::cli
