#include "ui/tensors_model.h"

#include <fstream>

#include "common/error.h"

namespace mpa::ui {

namespace {

using json = probes::json;

constexpr const char* kSchema = "mpaudit.tensors/1";

json parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), path + ": cannot open for reading");
  json j = json::parse(in, nullptr, false);
  require(!j.is_discarded() && j.is_object(), path + ": not a JSON report");
  return j;
}

double number(const json& j) { return j.is_number() ? j.get<double>() : NAN; }
std::optional<int> optional_int(const json& j) {
  return j.is_number_integer() ? std::optional<int>(j.get<int>()) : std::nullopt;
}

std::string shape_text(const json& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (const auto& d : shape) {
    if (!text.empty()) text += 'x';
    text += std::to_string(d.get<int64_t>());
  }
  return text;
}

TensorRow row_of(const std::string& step, const json& t) {
  TensorRow row;
  row.step = step;
  row.name = t.at("name");
  row.role = t.at("role");
  row.dtype = t.at("dtype");
  row.shape = shape_text(t.at("shape"));
  row.floating = t.at("kind") == "float";
  if (!row.floating) {
    row.count = t.at("count");
    return row;
  }
  const json& range = t.at("range");
  row.range = probes::RangeProbe::from_json(range);
  row.count = row.range.count;
  row.histogram = probes::ExpHistogram::from_json(range.at("exp_hist"));
  for (const auto& [target, f] : t.at("formats").items()) {
    TensorTargetFigures figures;
    figures.fit = probes::FormatFit::from_json(f.at("fit"));
    figures.flush_fraction = number(f.at("flush_to_zero_frac"));
    figures.subnormal_fraction = number(f.at("subnormal_frac"));
    figures.headroom_bits = number(f.at("headroom_bits"));
    const json& w = f.at("scale_window");
    figures.window_lo_log2 = optional_int(w.at("lo_log2"));
    figures.window_hi_log2 = optional_int(w.at("hi_log2"));
    figures.window_empty = w.at("empty");
    figures.window_reason = w.at("reason");
    row.targets[target] = std::move(figures);
  }
  return row;
}

}  // namespace

TensorsReportModel TensorsReportModel::read(const std::string& path) {
  const json j = parse_file(path);
  require(j.contains("schema") && j["schema"] == kSchema, path + ": not a tensors report (schema " + kSchema + ")");
  TensorsReportModel model;
  model.path = path;
  try {
    for (const auto& t : j.at("config").at("targets")) model.targets.push_back(t);
    for (const auto& step : j.at("steps"))
      for (const auto& t : step.at("tensors")) model.tensors.push_back(row_of(step.at("name"), t));
    if (const json& loss = j.at("loss_scale"); !loss.is_null()) {
      model.has_loss_scale = true;
      model.loss_scale_format = loss.at("format");
      const json& s = loss.at("static");
      model.static_scale_log2 = optional_int(s.at("scale_log2"));
      model.static_limited_by = s.at("limited_by");
      model.static_reason = s.at("reason");
      model.static_headroom_bits = number(s.at("headroom_bits"));
      model.static_flush_fraction = number(s.at("flush_frac"));
      model.skipped_steps = loss.at("dynamic").at("skipped_steps");
      for (const auto& p : loss.at("dynamic").at("trajectory"))
        model.trajectory.push_back({p.at("step"), p.at("scale_log2"), p.at("next_scale_log2"), p.at("skipped"),
                                    p.at("reason"), number(p.at("flush_frac"))});
    }
    for (const auto& m : j.at("master_weights"))
      model.master.push_back({m.at("step"), m.at("weight"), m.at("update"), m.at("updated"),
                              number(m.at("formats").at("fp16").at("vanished_frac")),
                              number(m.at("formats").at("bf16").at("vanished_frac")),
                              probes::ExpHistogram::from_json(m.at("ratio_hist"))});
    for (const auto& g : j.at("gates"))
      if (g.at("failed").get<bool>())
        model.failed_gates.push_back(g.at("expression").get<std::string>() + ": " + g.at("detail").get<std::string>());
  } catch (const json::exception& e) {
    fail(path + ": damaged tensors report (" + e.what() + ")");
  }
  require(!model.targets.empty(), path + ": the report has no target format");
  return model;
}

int TensorsReportModel::find(const std::string& id_or_name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].id() == id_or_name) return static_cast<int>(i);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == id_or_name) return static_cast<int>(i);
  return -1;
}

bool is_tensors_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const json j = json::parse(in, nullptr, false);
  return !j.is_discarded() && j.is_object() && j.contains("schema") && j["schema"] == kSchema;
}

}  // namespace mpa::ui
