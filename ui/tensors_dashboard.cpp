// The tensor dashboard's panels and its loop (setup -> frames -> cleanup, as ui/dashboard.cpp).
//   [SECTION] panels: tensor table, histogram with the scale window, loss-scale plot, master weights
//   [SECTION] run_tensors_dashboard
#include "ui/tensors_dashboard.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "common/error.h"
#include "tensor/formats.h"
#include "ui/panels.h"
#include "ui/tensors_model.h"
#include "ui/window.h"

namespace mpa::ui {

namespace {

constexpr int kScreenshotFrames = 4;  // ImGui sizes auto-fit columns over the first frames
const ImVec4 kSkippedColor(0.92f, 0.26f, 0.24f, 1.0f);
const ImVec4 kWarnColor(0.95f, 0.75f, 0.25f, 1.0f);

std::string percent_text(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g%%", 100 * fraction);
  return text;
}

std::string window_text(const TensorTargetFigures& f) {
  if (f.window_empty) return "none";
  if (!f.window_lo_log2 && !f.window_hi_log2) return "any";
  char text[48];
  const auto side = [](const std::optional<int>& e, const char* open) {
    return e ? "2^" + std::to_string(*e) : std::string(open);
  };
  std::snprintf(text, sizeof text, "[%s, %s]", side(f.window_lo_log2, "0").c_str(),
                side(f.window_hi_log2, "inf").c_str());
  return text;
}

// What the panels share: the report, the target shown and the selected tensor and pair.
struct TensorsSession {
  TensorsReportModel model;
  int target = 0;
  int selected = -1;
  int selected_pair = 0;
  const std::string& target_name() const { return model.targets[static_cast<size_t>(target)]; }
  const TensorTargetFigures* figures(int row) const {
    const auto& targets = model.tensors[static_cast<size_t>(row)].targets;
    const auto it = targets.find(target_name());
    return it == targets.end() ? nullptr : &it->second;
  }
};

// [SECTION] Panels

enum TensorColumn { kStep, kName, kRole, kDtype, kShape, kAbsmax, kOverflow, kFlush, kSubnormal, kWindow, kColumns };

struct TensorTablePanel {
  std::vector<int> rows;
  bool scroll_to_selection = true;

  double sort_value(const TensorsSession& s, int row, int column) const {
    const TensorRow& t = s.model.tensors[static_cast<size_t>(row)];
    const TensorTargetFigures* f = s.figures(row);
    switch (column) {
      case kAbsmax: return t.floating ? t.range.absmax() : NAN;
      case kOverflow: return f ? double(f->fit.overflow) : NAN;
      case kFlush: return f ? f->flush_fraction : NAN;
      case kSubnormal: return f ? f->subnormal_fraction : NAN;
      case kWindow: return f && f->window_hi_log2 ? double(*f->window_hi_log2) : NAN;
      default: return NAN;
    }
  }

  void sort(const TensorsSession& s, const ImGuiTableSortSpecs* specs) {
    rows.resize(s.model.tensors.size());
    std::iota(rows.begin(), rows.end(), 0);
    if (!specs || specs->SpecsCount == 0) return;
    const ImGuiTableColumnSortSpecs& spec = specs->Specs[0];
    const bool ascending = spec.SortDirection == ImGuiSortDirection_Ascending;
    const auto text_of = [&](int row) -> const std::string& {
      const TensorRow& t = s.model.tensors[static_cast<size_t>(row)];
      switch (spec.ColumnIndex) {
        case kRole: return t.role;
        case kDtype: return t.dtype;
        case kShape: return t.shape;
        default: return t.name;
      }
    };
    std::stable_sort(rows.begin(), rows.end(), [&](int a, int b) {
      if (spec.ColumnIndex == kStep) return ascending ? a < b : b < a;  // the report's step order, not the names'
      if (spec.ColumnIndex <= kShape) return ascending ? text_of(a) < text_of(b) : text_of(b) < text_of(a);
      const double x = sort_value(s, a, spec.ColumnIndex), y = sort_value(s, b, spec.ColumnIndex);
      if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);  // unmeasured last
      return ascending ? x < y : x > y;
    });
  }

  void Draw(TensorsSession& s) {
    ImGui::Begin("Tensors");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    std::vector<const char*> names;
    for (const std::string& t : s.model.targets) names.push_back(t.c_str());
    bool target_changed = ImGui::Combo("target", &s.target, names.data(), static_cast<int>(names.size()));
    ImGui::SameLine();
    ImGui::TextDisabled("%zu tensors; flush = nonzero values that round to 0", s.model.tensors.size());
    for (const std::string& gate : s.model.failed_gates)
      ImGui::TextColored(kSkippedColor, "gate failed: %s", gate.c_str());
    const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV |
                                  ImGuiTableFlags_SizingFixedFit;
    if (ImGui::BeginTable("tensors", kColumns, flags)) {
      ImGui::TableSetupScrollFreeze(0, 1);
      for (const char* header :
           {"step", "tensor", "role", "dtype", "shape", "absmax", "overflow", "flush", "subnormal", "scale window"})
        ImGui::TableSetupColumn(header);
      ImGui::TableHeadersRow();
      ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
      if (rows.size() != s.model.tensors.size() || target_changed || (specs && specs->SpecsDirty)) {
        sort(s, specs);
        if (specs) specs->SpecsDirty = false;
      }
      ImGuiListClipper clipper;
      clipper.Begin(static_cast<int>(rows.size()));
      while (clipper.Step())
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) draw_row(s, rows[static_cast<size_t>(i)]);
      if (scroll_to_selection) {
        const auto at = std::find(rows.begin(), rows.end(), s.selected);
        if (at != rows.end()) ImGui::SetScrollY(float(at - rows.begin()) * ImGui::GetTextLineHeightWithSpacing());
        scroll_to_selection = false;
      }
      ImGui::EndTable();
    }
    ImGui::End();
  }

  void draw_row(TensorsSession& s, int row) {
    const TensorRow& t = s.model.tensors[static_cast<size_t>(row)];
    const TensorTargetFigures* f = s.figures(row);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(row);
    if (ImGui::Selectable(t.step.c_str(), s.selected == row, ImGuiSelectableFlags_SpanAllColumns)) s.selected = row;
    ImGui::PopID();
    for (const std::string* text : {&t.name, &t.role, &t.dtype, &t.shape}) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(text->c_str());
    }
    ImGui::TableNextColumn();
    if (!t.floating || !f) {
      ImGui::TextDisabled("integer: no format figures");
      return;
    }
    ImGui::TextUnformatted(format_number(t.range.absmax()).c_str());
    ImGui::TableNextColumn();
    if (f->fit.overflow > 0)
      ImGui::TextColored(kSkippedColor, "%lld", static_cast<long long>(f->fit.overflow));
    else
      ImGui::TextDisabled("0");
    ImGui::TableNextColumn();
    if (f->flush_fraction > 0)
      ImGui::TextColored(kWarnColor, "%s", percent_text(f->flush_fraction).c_str());
    else
      ImGui::TextDisabled("0");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(percent_text(f->subnormal_fraction).c_str());
    ImGui::TableNextColumn();
    if (f->window_empty)
      ImGui::TextColored(kSkippedColor, "none");
    else
      ImGui::TextUnformatted(window_text(*f).c_str());
    if (!f->window_reason.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", f->window_reason.c_str());
  }
};

// The selected tensor's histogram in the target's zones at scale 2^scale_log2 (the window's top at start).
struct TensorHistogramPanel {
  bool log_counts = true;
  int scale_log2 = 0;
  int scale_for = -2;  // the tensor and target the scale was set for
  int scale_target = -1;

  void Draw(TensorsSession& s) {
    ImGui::Begin("Histogram");
    if (s.selected < 0) {
      ImGui::TextDisabled("select a tensor in the table");
      return ImGui::End();
    }
    const TensorRow& t = s.model.tensors[static_cast<size_t>(s.selected)];
    ImGui::Text("%s  %s[%s]  %s", t.id().c_str(), t.dtype.c_str(), t.shape.c_str(), t.role.c_str());
    const TensorTargetFigures* f = s.figures(s.selected);
    if (!t.floating || !f) {
      ImGui::TextDisabled("integer tensor of %lld values: formats apply to floating tensors",
                          static_cast<long long>(t.count));
      return ImGui::End();
    }
    if (scale_for != s.selected || scale_target != s.target) {
      scale_log2 = f->window_hi_log2.value_or(0);
      scale_for = s.selected;
      scale_target = s.target;
    }
    ImGui::Text("safe scale window in %s: %s", s.target_name().c_str(), window_text(*f).c_str());
    if (!f->window_reason.empty()) {
      ImGui::SameLine();
      ImGui::TextColored(f->window_empty ? kSkippedColor : ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], "(%s)",
                         f->window_reason.c_str());
    }
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
    ImGui::SliderInt("scale 2^s", &scale_log2, -64, 64);
    ImGui::SameLine();
    ImGui::Checkbox("log counts", &log_counts);
    exponent_histogram("histogram", {&t.histogram, "values"}, {}, parse_format(s.target_name()), log_counts,
                       {scale_log2, f->window_lo_log2, f->window_hi_log2});
    ImGui::TextDisabled("dashed: flush edge at the smallest safe scale, overflow edge at the largest");
    const probes::RangeProbe& r = t.range;
    ImGui::Text("min %s  max %s  absmax %s  NaN %lld  Inf %lld  headroom %s bits",
                format_number(r.finite ? r.min : NAN).c_str(), format_number(r.finite ? r.max : NAN).c_str(),
                format_number(r.absmax()).c_str(), static_cast<long long>(r.nan),
                static_cast<long long>(r.pos_inf + r.neg_inf), format_number(f->headroom_bits).c_str());
    ImGui::Text("unscaled: %lld overflow, %lld flush (%s), %lld subnormal of %lld nonzero",
                static_cast<long long>(f->fit.overflow), static_cast<long long>(f->fit.flush_to_zero),
                percent_text(f->flush_fraction).c_str(), static_cast<long long>(f->fit.subnormal),
                static_cast<long long>(f->fit.nonzero));
    ImGui::End();
  }
};

// The dynamic loss scale along the steps: the scale each step ran at (log2), skipped steps in red, the
// static recommendation as a dashed line.
struct LossScalePanel {
  void Draw(const TensorsSession& s) {
    ImGui::Begin("Loss scale");
    const TensorsReportModel& m = s.model;
    if (!m.has_loss_scale) {
      ImGui::TextDisabled("no gradients in this report (--grads names them)");
      return ImGui::End();
    }
    if (m.static_scale_log2)
      ImGui::Text("static (%s): 2^%d, limited by %s; %s bits of headroom, %s of gradient values flush",
                  m.loss_scale_format.c_str(), *m.static_scale_log2, m.static_limited_by.c_str(),
                  format_number(m.static_headroom_bits).c_str(), percent_text(m.static_flush_fraction).c_str());
    else
      ImGui::Text("static (%s): none (%s)", m.loss_scale_format.c_str(), m.static_reason.c_str());
    ImGui::Text("dynamic: %lld of %zu steps skipped", static_cast<long long>(m.skipped_steps), m.trajectory.size());
    draw_plot(m);
    ImGui::End();
  }

  void draw_plot(const TensorsReportModel& m) {
    if (m.trajectory.empty()) return;
    int lo = m.trajectory.front().scale_log2, hi = lo;
    for (const ScaleStep& p : m.trajectory) {
      lo = std::min({lo, p.scale_log2, p.next_scale_log2});
      hi = std::max({hi, p.scale_log2, p.next_scale_log2});
    }
    if (m.static_scale_log2) {
      lo = std::min(lo, *m.static_scale_log2);
      hi = std::max(hi, *m.static_scale_log2);
    }
    --lo;
    ++hi;
    const float label_width = ImGui::CalcTextSize("2^-000").x;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImVec2 size(std::max(ImGui::GetContentRegionAvail().x, 200.0f),
                      std::max(ImGui::GetContentRegionAvail().y - 4, 80.0f));
    ImGui::InvisibleButton("trajectory", size);
    const bool hovered = ImGui::IsItemHovered();
    const ImVec2 plot_min(origin.x + label_width, origin.y + 4), plot_max(origin.x + size.x - 4, origin.y + size.y - 4);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(plot_min, plot_max, IM_COL32(20, 20, 26, 255));
    const size_t n = m.trajectory.size();
    const auto x_of = [&](double step) { return plot_min.x + float(step / double(n)) * (plot_max.x - plot_min.x); };
    const auto y_of = [&](double log2) {
      return plot_max.y - float((log2 - lo) / double(hi - lo)) * (plot_max.y - plot_min.y);
    };
    for (int e = lo; e <= hi; e += std::max(1, (hi - lo) / 6)) {
      draw->AddLine(ImVec2(plot_min.x, y_of(e)), ImVec2(plot_max.x, y_of(e)), IM_COL32(60, 60, 70, 255));
      draw->AddText(ImVec2(origin.x, y_of(e) - ImGui::GetFontSize() / 2), IM_COL32(160, 160, 160, 255),
                    ("2^" + std::to_string(e)).c_str());
    }
    if (m.static_scale_log2)
      for (float x = plot_min.x; x < plot_max.x; x += 8)
        draw->AddLine(ImVec2(x, y_of(*m.static_scale_log2)),
                      ImVec2(std::min(x + 4, plot_max.x), y_of(*m.static_scale_log2)), IM_COL32(120, 200, 120, 255), 2);
    for (size_t i = 0; i < n; ++i) {
      const ScaleStep& p = m.trajectory[i];
      const float x0 = x_of(double(i)), x1 = x_of(double(i + 1)), y = y_of(p.scale_log2);
      draw->AddLine(ImVec2(x0, y), ImVec2(x1, y), IM_COL32(90, 170, 250, 255), 2);
      if (p.next_scale_log2 != p.scale_log2)
        draw->AddLine(ImVec2(x1, y), ImVec2(x1, y_of(p.next_scale_log2)), IM_COL32(90, 170, 250, 255), 2);
      if (p.skipped)
        draw->AddCircleFilled(ImVec2((x0 + x1) / 2, y), std::max(3.0f, std::min(6.0f, (x1 - x0) / 2)),
                              ImGui::GetColorU32(kSkippedColor));
    }
    if (hovered) {
      const float t = (ImGui::GetIO().MousePos.x - plot_min.x) / std::max(plot_max.x - plot_min.x, 1.0f);
      const size_t i = std::min(n - 1, static_cast<size_t>(std::max(0.0f, t) * float(n)));
      const ScaleStep& p = m.trajectory[i];
      ImGui::SetTooltip("%s: scale 2^%d%s%s\nflushed %s", p.step.c_str(), p.scale_log2, p.skipped ? ", skipped: " : "",
                        p.reason.c_str(), percent_text(p.flush_fraction).c_str());
    }
  }
};

// Each weight/update pair's vanishing updates, and the selected pair's |update| / |weight| histogram.
struct MasterWeightsPanel {
  int followed_tensor = -1;  // the table's selection the pair was last matched to
  bool scroll_to_pair = false;

  void Draw(TensorsSession& s) {
    ImGui::Begin("Master weights");
    if (s.model.master.empty()) {
      ImGui::TextDisabled("no weight/update pairs in this report (--master pairs them)");
      return ImGui::End();
    }
    // Selecting a weight or an update in the table selects its pair here.
    if (s.selected != followed_tensor && s.selected >= 0) {
      followed_tensor = s.selected;
      const TensorRow& t = s.model.tensors[static_cast<size_t>(s.selected)];
      for (size_t i = 0; i < s.model.master.size(); ++i) {
        const MasterRow& m = s.model.master[i];
        if (m.step == t.step && (m.weight == t.name || m.update == t.name)) {
          s.selected_pair = static_cast<int>(i);
          scroll_to_pair = true;
        }
      }
    }
    ImGui::TextDisabled("updates that vanish when added to a 16-bit weight: round(W + dW) == round(W)");
    if (ImGui::BeginTable("pairs", 5, ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit,
                          ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 6))) {
      for (const char* header : {"step", "weight", "updated", "fp16 vanish", "bf16 vanish"})
        ImGui::TableSetupColumn(header);
      ImGui::TableHeadersRow();
      for (size_t i = 0; i < s.model.master.size(); ++i) {
        const MasterRow& m = s.model.master[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::PushID(static_cast<int>(i));
        if (ImGui::Selectable(m.step.c_str(), s.selected_pair == int(i), ImGuiSelectableFlags_SpanAllColumns))
          s.selected_pair = int(i);
        ImGui::PopID();
        if (scroll_to_pair && s.selected_pair == int(i)) {
          ImGui::SetScrollHereY();
          scroll_to_pair = false;
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(m.weight.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(m.updated));
        for (double fraction : {m.fp16_vanished, m.bf16_vanished}) {
          ImGui::TableNextColumn();
          if (fraction > 0.5)
            ImGui::TextColored(kSkippedColor, "%s", percent_text(fraction).c_str());
          else
            ImGui::TextUnformatted(percent_text(fraction).c_str());
        }
      }
      ImGui::EndTable();
    }
    const MasterRow& pair = s.model.master[static_cast<size_t>(s.selected_pair)];
    ImGui::Text("%s: |%s| / |%s|", pair.step.c_str(), pair.update.c_str(), pair.weight.c_str());
    exponent_histogram("ratio", {&pair.ratio, "update/weight"}, {}, std::nullopt, true);
    ImGui::End();
  }
};

// The tensor shown at start: the one asked for, else the first with the largest flushed share.
int initial_selection(const TensorsSession& s, const std::string& asked) {
  if (!asked.empty()) {
    const int found = s.model.find(asked);
    require(found >= 0, "--select: no tensor '" + asked + "' in " + s.model.path + " (give STEP/TENSOR or TENSOR)");
    return found;
  }
  int best = s.model.tensors.empty() ? -1 : 0;
  for (int i = 0; i < int(s.model.tensors.size()); ++i) {
    const TensorTargetFigures* f = s.figures(i);
    const TensorTargetFigures* b = best >= 0 ? s.figures(best) : nullptr;
    if (f && (!b || f->flush_fraction > b->flush_fraction)) best = i;
  }
  return best;
}

void place(float x, float y, float w, float h) {
  const ImVec2 work = ImGui::GetMainViewport()->WorkSize;
  ImGui::SetNextWindowPos(ImVec2(work.x * x, work.y * y), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(work.x * w, work.y * h), ImGuiCond_Always);
}

}  // namespace

// [SECTION] run_tensors_dashboard

int run_tensors_dashboard(const TensorsDashboardOptions& options) {
  // Setup: the report first, so a bad file fails before any window opens; then the window and ImGui.
  TensorsSession session{TensorsReportModel::read(options.report_path)};
  session.selected = initial_selection(session, options.selected);
  const bool headless = !options.screenshot_path.empty();
  GLFWwindow* window = open_window(options.width, options.height, headless, "mpaudit tensors - " + options.report_path);
  start_imgui(window, options.font_scale, headless);
  TensorTablePanel table;
  TensorHistogramPanel histogram;
  LossScalePanel loss_scale;
  MasterWeightsPanel master;

  // Loop: each panel in its place (the table and histogram above, the scale plot and pairs below).
  bool screenshot_written = false;
  for (int frame = 0; !glfwWindowShouldClose(window); ++frame) {
    begin_frame();
    place(0, 0, 0.58f, 0.6f);
    table.Draw(session);
    place(0.58f, 0, 0.42f, 0.6f);
    histogram.Draw(session);
    place(0, 0.6f, 0.58f, 0.4f);
    loss_scale.Draw(session);
    place(0.58f, 0.6f, 0.42f, 0.4f);
    master.Draw(session);
    ImGui::Render();
    draw_frame(window);
    if (headless && frame + 1 >= kScreenshotFrames) {
      screenshot_written = save_framebuffer_png(window, options.screenshot_path);
      break;
    }
    glfwSwapBuffers(window);
  }

  // Cleanup, in the reverse order of setup.
  close_window(window);
  require(!headless || screenshot_written, options.screenshot_path + ": cannot write the screenshot");
  return 0;
}

}  // namespace mpa::ui
