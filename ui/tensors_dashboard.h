// The tensor dashboard: `mpaudit view REPORT` for a `mpaudit tensors` report. One screen, shaped like the
// audit dashboard: the tensors as a sortable table (per target: overflow, flushed and subnormal shares, the
// safe scale window), the selected tensor's exponent histogram inside the target's zones at a chosen
// scale with the scale window's edges, the dynamic loss scale along the steps (skipped steps marked, the
// static recommendation as a line), and the vanishing updates of each weight/update pair. It reads the
// report's JSON only (ui/tensors_model.h).
#pragma once
#include <string>

namespace mpa::ui {

struct TensorsDashboardOptions {
  std::string report_path;
  std::string screenshot_path;  // empty: interactive
  int width = 1400, height = 900;
  float font_scale = 0;
  std::string selected;  // "STEP/TENSOR" or a tensor name shown at start (empty: the first with most flushes)
};

// Returns the exit code (0); fails with mpa::Error on a bad report, an unknown --select, no display, or a
// screenshot that cannot be written.
int run_tensors_dashboard(const TensorsDashboardOptions& options);

}  // namespace mpa::ui
