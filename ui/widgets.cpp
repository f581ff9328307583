// The look every panel shares: verdict colours, number formatting, links to nodes.
#include <algorithm>
#include <cstdio>

#include "ui/panels.h"

namespace mpa::ui {

namespace {
const ImVec4 kKeptFp32Color(0.34f, 0.71f, 0.91f, 1.0f);  // blue: no verdict colour
}  // namespace

ImVec4 verdict_color(report::Verdict verdict) {
  switch (verdict) {
    case report::Verdict::Unsafe: return ImVec4(0.92f, 0.26f, 0.24f, 1.0f);
    case report::Verdict::Warn: return ImVec4(0.95f, 0.68f, 0.18f, 1.0f);
    case report::Verdict::Safe: break;
  }
  return ImVec4(0.35f, 0.80f, 0.40f, 1.0f);
}

void verdict_badge(report::Verdict verdict) {
  const char* label = verdict == report::Verdict::Unsafe ? "UNSAFE" : verdict == report::Verdict::Warn ? "WARN" : "SAFE";
  ImGui::TextColored(verdict_color(verdict), "%s", label);
}

void gate_badge(const ReportModel& model, bool pass) {
  // No gate result before every node and sample has run.
  if (model.partial()) return ImGui::TextDisabled("[auditing]");
  ImGui::PushStyleColor(ImGuiCol_Button, verdict_color(pass ? report::Verdict::Safe : report::Verdict::Unsafe));
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0, 0, 0, 1));
  ImGui::SmallButton(pass ? " PASS " : " FAIL ");
  ImGui::PopStyleColor(2);
}

void verdict_badge(const NodeFigures& figures) {
  if (figures.unmeasured()) return ImGui::TextDisabled(figures.pending ? "pending" : "not run");
  verdict_badge(figures.verdict);
  if (!figures.kept_fp32) return;
  ImGui::SameLine();
  ImGui::TextColored(kKeptFp32Color, "FP32");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("computed in FP32 in this target's runs (--keep-fp32 or a what-if pin)");
}

ImVec4 fix_keep_color() { return ImVec4(0.80f, 0.47f, 0.98f, 1.0f); }

std::string kept_because(const report::KeptNode& kept) {
  std::string text;
  for (const report::FixGateValue& g : kept.needed_because)
    text += (text.empty() ? "" : "; ") + g.gate + " on '" + g.output +
            "' = " + (std::isnan(g.value) ? "n/a" : format_number(g.value, "%.4g")) + (g.held ? "" : " (fails)");
  return text.empty() ? "in the keep-set (not shown each needed: the search stopped short)" : "without it " + text;
}

void fix_keep_tag(const ReportModel& model, int node_index) {
  const report::KeptNode* kept = model.kept_by_fix(node_index);
  if (!kept) return;
  ImGui::SameLine();
  ImGui::TextColored(fix_keep_color(), "KEEP");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("fix keeps it in FP32: %s\naudit in %s: %s", kept_because(*kept).c_str(),
                      model.fix()->target.c_str(), kept->audit_verdict.c_str());
}

std::string format_number(double value, const char* format) {
  if (std::isnan(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string format_sqnr(double sqnr_db) {
  if (sqnr_db >= probes::Divergence::kMaxSqnrDb) return "exact";
  return format_number(sqnr_db, "%.1f");
}

void health_pills(const ValueHealth& health) {
  struct Pill {
    const char* letter;
    int64_t count;
    ImU32 color;  // Okabe-Ito colours, distinct under the common colour-blindnesses; the letter decides anyway
    const char* meaning;
  };
  const Pill pills[] = {
      {"N", health.nan, IM_COL32(213, 94, 0, 255), "NaN"},
      {"I", health.inf_or_overflow, IM_COL32(230, 159, 0, 255), "Inf or overflow"},
      {"s", health.subnormal, IM_COL32(204, 121, 167, 255), "subnormal"},
      {"f", health.flushed, IM_COL32(86, 180, 233, 255), "flushed to zero"},
      {"n", health.normal, IM_COL32(150, 150, 150, 255), "normal"},
  };
  const float height = ImGui::GetTextLineHeight(), pad = height * 0.3f;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  bool first = true;
  for (const Pill& pill : pills) {
    if (pill.count == 0) continue;
    if (!first) ImGui::SameLine(0, 2);
    first = false;
    const ImVec2 text_size = ImGui::CalcTextSize(pill.letter);
    const ImVec2 min = ImGui::GetCursorScreenPos(), size(text_size.x + 2 * pad, height);
    ImGui::Dummy(size);
    draw->AddRectFilled(min, ImVec2(min.x + size.x, min.y + size.y), pill.color, height / 2);
    draw->AddText(ImVec2(min.x + pad, min.y), IM_COL32(0, 0, 0, 255), pill.letter);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: %lld reference values", pill.meaning, static_cast<long long>(pill.count));
  }
  if (first) ImGui::TextDisabled("-");
}

void section_title(const char* title) {
  ImGui::Spacing();
  ImGui::TextDisabled("%s", title);
  ImGui::Separator();
}

void node_link(const ReportModel& model, DashboardSelection& selection, int node_index) {
  const report::NodeStats& node = model.node(node_index);
  ImGui::PushID(node_index);
  if (ImGui::SmallButton(node.name.c_str())) selection.select_node(node_index);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("#%d %s (%s)", node_index, node.name.c_str(), node.op_type.c_str());
  ImGui::PopID();
}

void audit_progress(const AuditStatus& status, float width) {
  const float fraction = status.total > 0 ? static_cast<float>(status.done) / static_cast<float>(status.total) : 0.0f;
  char text[128];
  std::snprintf(text, sizeof text, "auditing: %lld / %lld node runs, %.1f s, ETA %s",
                static_cast<long long>(status.done), static_cast<long long>(status.total), status.elapsed_s,
                std::isnan(status.eta_s) ? "-" : format_number(status.eta_s, "%.1f s").c_str());
  ImGui::ProgressBar(fraction, ImVec2(width, 0), text);
}

void pin_toggle(const ReportModel& model, DashboardSelection& selection, const std::vector<int>& nodes,
                std::string what, bool as_button) {
  if (!selection.pins || nodes.empty()) return;
  if (what.empty()) what = model.node(model.top_level_of(nodes.front())).name;
  const bool pinned = selection.pins->all_pinned(model, nodes);
  const std::string label =
      pinned ? "unpin " + what + " (back to " + selection.target + ")" : "pin " + what + " to FP32";
  if (as_button ? ImGui::SmallButton(label.c_str()) : ImGui::Selectable(label.c_str()))
    selection.pins->set(model, nodes, !pinned);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("what-if: the audit runs again with the pinned nodes in FP32");
}

// [SECTION] Exponent histogram inside the format's window

namespace {
const ImU32 kMainBarColor = IM_COL32(90, 170, 250, 170);
const ImU32 kOverlayBarColor = IM_COL32(240, 200, 90, 255);
const ImU32 kWindowEdgeColor = IM_COL32(250, 230, 80, 255);
}  // namespace

void exponent_histogram(const char* id, const HistogramSeries& main, const HistogramSeries& overlay,
                        std::optional<Format> format, bool log_counts, const HistogramScale& scale) {
  using probes::ExpHistogram;
  constexpr int kAxisMin = ExpHistogram::kMinExp, kAxisMax = ExpHistogram::kMaxExp + 1;
  const float label_height = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 canvas_min = ImGui::GetCursorScreenPos();
  const ImVec2 canvas_size(std::max(ImGui::GetContentRegionAvail().x, 200.0f), ImGui::GetFontSize() * 9);
  ImGui::InvisibleButton(id, canvas_size);
  const bool hovered = ImGui::IsItemHovered();
  const ImVec2 plot_min(canvas_min.x + 2, canvas_min.y + label_height);
  const ImVec2 plot_max(canvas_min.x + canvas_size.x - 2, canvas_min.y + canvas_size.y - label_height);
  const auto x_of = [&](double log2_value) {
    const double t = (std::clamp(log2_value, double(kAxisMin), double(kAxisMax)) - kAxisMin) / (kAxisMax - kAxisMin);
    return plot_min.x + static_cast<float>(t) * (plot_max.x - plot_min.x);
  };
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(plot_min, plot_max, IM_COL32(20, 20, 26, 255));

  // The format's regions behind the bars, labelled above the plot: where a value lands once multiplied by
  // 2^scale_log2, so a scale moves the regions left by its exponent.
  if (format) {
    const FormatZones zones = format_zones(*format);
    const double shift = -scale.scale_log2;
    struct Region {
      double from, to;
      ImU32 color;
      const char* label;
    };
    const Region regions[] = {
        {double(kAxisMin), zones.flush_log2 + shift, IM_COL32(120, 120, 140, 60), "flush to 0"},
        {zones.flush_log2 + shift, zones.normal_log2 + shift, IM_COL32(160, 130, 220, 70), "subnormal"},
        {zones.normal_log2 + shift, zones.max_log2 + shift, IM_COL32(80, 180, 100, 45), "normal"},
        {zones.max_log2 + shift, double(kAxisMax), IM_COL32(235, 70, 60, 70), "overflow"},
    };
    for (const Region& r : regions) {
      const float x0 = x_of(r.from), x1 = x_of(r.to);
      if (x1 - x0 < 1) continue;  // outside the axis (bf16's subnormals lie below 2^-40)
      draw->AddRectFilled(ImVec2(x0, plot_min.y), ImVec2(x1, plot_max.y), r.color);
      if (ImGui::CalcTextSize(r.label).x < x1 - x0)
        draw->AddText(ImVec2(x0 + 2, canvas_min.y), IM_COL32(200, 200, 200, 255), r.label);
    }
    // The safe scale window's edges: the flush edge at the smallest safe scale and the overflow edge at the
    // largest; the values between them fit at every scale of the window.
    const auto edge = [&](std::optional<int> scale_log2, double zone_log2) {
      if (!scale_log2) return;
      const float x = x_of(zone_log2 - *scale_log2);
      for (float y = plot_min.y; y < plot_max.y; y += 6)
        draw->AddLine(ImVec2(x, y), ImVec2(x, std::min(y + 3, plot_max.y)), kWindowEdgeColor, 2);
    };
    edge(scale.window_lo_log2, zones.flush_log2);
    edge(scale.window_hi_log2, zones.max_log2);
  }

  // Bars: one per power of two; the main series as wide translucent bars, the overlay as narrow ones on top.
  const auto count_at = [](const HistogramSeries& series, int bin) {
    return series.counts ? series.counts->counts[static_cast<size_t>(bin)] : int64_t{0};
  };
  int64_t max_count = 1;
  for (int b = ExpHistogram::kFirstPow; b < ExpHistogram::kAbove; ++b)
    max_count = std::max({max_count, count_at(main, b), count_at(overlay, b)});
  const auto height_of = [&](int64_t count) {
    const double share =
        log_counts ? std::log1p(double(count)) / std::log1p(double(max_count)) : double(count) / double(max_count);
    return static_cast<float>(share) * (plot_max.y - plot_min.y);
  };
  for (int b = ExpHistogram::kFirstPow; b < ExpHistogram::kAbove; ++b) {
    const int exponent = ExpHistogram::kMinExp + (b - ExpHistogram::kFirstPow);
    const float x0 = x_of(exponent), x1 = x_of(exponent + 1), inset = (x1 - x0) * 0.3f;
    if (const int64_t n = count_at(main, b))
      draw->AddRectFilled(ImVec2(x0, plot_max.y - height_of(n)), ImVec2(x1, plot_max.y), kMainBarColor);
    if (const int64_t n = count_at(overlay, b))
      draw->AddRectFilled(ImVec2(x0 + inset, plot_max.y - height_of(n)), ImVec2(x1 - inset, plot_max.y),
                          kOverlayBarColor);
  }
  for (int exponent = kAxisMin; exponent <= kAxisMax; exponent += 10) {
    const std::string label = "2^" + std::to_string(exponent);
    const float x = std::min(x_of(exponent), plot_max.x - ImGui::CalcTextSize(label.c_str()).x);
    draw->AddLine(ImVec2(x_of(exponent), plot_max.y), ImVec2(x_of(exponent), plot_max.y + 3),
                  IM_COL32(160, 160, 160, 255));
    draw->AddText(ImVec2(x, plot_max.y + 2), IM_COL32(160, 160, 160, 255), label.c_str());
  }

  const auto legend = [&](const HistogramSeries& series, ImU32 color) {
    if (!series.counts) return;
    const auto count = [&](int bin) { return static_cast<long long>(count_at(series, bin)); };
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(color), "%s", series.label);
    ImGui::SameLine();
    ImGui::TextDisabled("zero %lld, <2^-40 %lld, >=2^41 %lld, Inf %lld, NaN %lld", count(ExpHistogram::kZero),
                        count(ExpHistogram::kBelow), count(ExpHistogram::kAbove), count(ExpHistogram::kInf),
                        count(ExpHistogram::kNan));
  };
  if (hovered) {
    const float t = (ImGui::GetIO().MousePos.x - plot_min.x) / std::max(plot_max.x - plot_min.x, 1.0f);
    const int exponent =
        std::clamp(kAxisMin + static_cast<int>(std::floor(t * (kAxisMax - kAxisMin))), kAxisMin, kAxisMax - 1);
    const int bin = ExpHistogram::kFirstPow + exponent - ExpHistogram::kMinExp;
    char text[256];
    int used = std::snprintf(text, sizeof text, "2^%d <= |x| < 2^%d", exponent, exponent + 1);
    for (const HistogramSeries* series : {&main, &overlay})
      if (series->counts && used > 0 && used < int(sizeof text))
        used += std::snprintf(text + used, sizeof text - size_t(used), "\n%s %lld", series->label,
                              static_cast<long long>(count_at(*series, bin)));
    ImGui::SetTooltip("%s", text);
  }
  legend(main, kMainBarColor);
  legend(overlay, kOverlayBarColor);
}

}  // namespace mpa::ui
