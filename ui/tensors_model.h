// What the tensor dashboard shows, read from a `mpaudit tensors` report (schema mpaudit.tensors/1) and
// nothing else: one row per tensor of every step with its figures per target format, the dynamic loss
// scale's trajectory and the static recommendation, the weight/update pairs. Window-free, so tests check
// it without a display.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probes/exp_histogram.h"
#include "probes/format_fit.h"
#include "probes/range_probe.h"

namespace mpa::ui {

struct TensorTargetFigures {
  probes::FormatFit fit;
  double flush_fraction = 0, subnormal_fraction = 0;
  double headroom_bits = NAN;
  std::optional<int> window_lo_log2, window_hi_log2;
  bool window_empty = false;
  std::string window_reason;
};

struct TensorRow {
  std::string step, name, role, dtype, shape;
  bool floating = false;
  int64_t count = 0;         // integer tensors: their element count only
  probes::RangeProbe range;  // floating tensors
  probes::ExpHistogram histogram;
  std::map<std::string, TensorTargetFigures> targets;
  std::string id() const { return step + "/" + name; }
};

struct ScaleStep {
  std::string step;
  int scale_log2 = 0, next_scale_log2 = 0;
  bool skipped = false;
  std::string reason;
  double flush_fraction = NAN;
};

struct MasterRow {
  std::string step, weight, update;
  int64_t updated = 0;
  double fp16_vanished = 0, bf16_vanished = 0;  // fractions of the updated elements
  probes::ExpHistogram ratio;
};

struct TensorsReportModel {
  std::string path;
  std::vector<std::string> targets;
  std::vector<TensorRow> tensors;
  // Loss scale (absent without gradients).
  bool has_loss_scale = false;
  std::string loss_scale_format, static_limited_by, static_reason;
  std::optional<int> static_scale_log2;
  double static_headroom_bits = NAN, static_flush_fraction = NAN;
  int64_t skipped_steps = 0;
  std::vector<ScaleStep> trajectory;
  std::vector<MasterRow> master;
  std::vector<std::string> failed_gates;  // "EXPR: detail"

  // Fails (mpa::Error) naming the file when it cannot be read or is not a tensors report.
  static TensorsReportModel read(const std::string& path);
  // -1 when no tensor has that id ("STEP/TENSOR") or, failing that, that name.
  int find(const std::string& id_or_name) const;
};

// Whether the JSON file at `path` is a tensors report (its "schema" says so); false for anything else,
// unreadable files included (the audit report reader then says what is wrong).
bool is_tensors_report(const std::string& path);

}  // namespace mpa::ui
