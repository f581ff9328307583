// Graph view: the model's nodes as a layered DAG (ui/graph_model.h), collapsed by name scope, coloured by a
// chosen metric with a legend. The layout runs on a worker thread; until it lands the previous layout stays
// on screen with a progress bar, so a frame never waits for it. Drawn with ImDrawList: off-screen items and
// edges are culled, labels are dropped when zoomed out.
//   [SECTION] worker
//   [SECTION] drawing helpers
//   [SECTION] the panel
#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "ui/graph_model.h"
#include "ui/panels.h"

namespace mpa::ui {

namespace {

// Scopes open at start while the visible items stay within this many (ui/graph_model.h initial_expansion).
constexpr int kInitialItemBudget = 250;
constexpr float kMinZoom = 0.01f, kMaxZoom = 4.0f;
constexpr float kReadableZoom = 0.75f;  // items tall enough for two lines of label
constexpr float kBoxPadding = 10, kBoxTitle = 20;  // world units around and above an open group's members

const ImU32 kEdgeColor = IM_COL32(150, 150, 165, 170);
const ImU32 kBackEdgeColor = IM_COL32(190, 130, 230, 200);  // edges against the layer order (between groups)
const ImU32 kInputEdgeColor = IM_COL32(255, 255, 255, 255);
const ImU32 kOutputEdgeColor = IM_COL32(86, 180, 233, 255);
const ImU32 kNotMeasuredColor = IM_COL32(110, 110, 122, 255);

ImU32 tone_color(BinTone tone) {
  const Rgb rgb = tone_rgb(tone);  // the verdict tones are verdict_color()'s
  return IM_COL32(rgb.r, rgb.g, rgb.b, 255);
}

// A cue besides colour, so that no one has to tell red from green: the label starts with it.
const char* tone_mark(BinTone tone) { return tone == BinTone::Unsafe ? "!! " : tone == BinTone::Warn ? "! " : ""; }

struct Box {
  int scope;
  Point min, max;  // members' bounds plus padding; the title sits above min.y
};

}  // namespace

// [SECTION] Worker

struct GraphPanel::State {
  uint64_t model = 0;         // the identity of the model the overlay below was computed for
  size_t structure_hash = 0;  // the graph the tree below was built for
  std::unique_ptr<ScopeTree> tree;
  std::vector<std::pair<int, int>> edges;
  std::vector<char> expanded;

  std::string overlay_target;
  GraphMetric overlay_metric = GraphMetric::Verdict;
  std::optional<ScopeOverlay> overlay;

  // What is on screen: a visible graph with its layout and the boxes of open groups.
  VisibleGraph shown_graph;
  std::optional<GraphLayout> shown_layout;
  std::vector<char> shown_expanded;
  std::vector<Box> boxes;
  Point bounds_min, bounds_max;  // of the layout and the boxes: what Fit shows

  // The layout being computed.
  struct Job {
    VisibleGraph graph;
    std::vector<char> expanded;
    LayoutProgress progress;
    std::optional<GraphLayout> result;
    std::atomic<bool> done{false};
    std::thread thread;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  };
  std::unique_ptr<Job> job;

  // View: the world point at the canvas centre and pixels per world unit.
  Point pan;
  float zoom = 1;
  bool fit_pending = true;
  bool first_view = true;  // the first layout of this report: a large graph opens readable, not whole
  bool fit_when_landed = false;  // Open all / Close all: fit the layout they asked for once it lands
  int anchor_node = -1;  // keep this node's item where it was on screen when the next layout lands
  ImVec2 anchor_screen;
  int last_selection = -1;
  bool dragging = false;
  int context_item = -1;  // the item a right-click menu is open for
  double last_layout_ms = 0;  // from start to the frame that took it on screen
  int last_layout_items = 0;

  ~State() { stop_job(); }

  void stop_job() {
    if (!job) return;
    job->progress.cancel = true;
    job->thread.join();
    job.reset();
  }

  void start_layout() {
    stop_job();
    job = std::make_unique<Job>();
    job->graph = visible_graph(*tree, expanded, edges);
    job->expanded = expanded;
    Job* j = job.get();
    LayoutInput input{static_cast<int>(j->graph.items.size()), j->graph.edges};
    j->thread = std::thread([j, input = std::move(input)] {
      j->result = layered_layout(input, &j->progress);
      j->done.store(true, std::memory_order_release);
    });
  }

  // Takes a finished layout on screen; false while none is ready.
  bool collect_layout() {
    if (!job || !job->done.load(std::memory_order_acquire)) return false;
    job->thread.join();
    last_layout_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - job->started).count();
    last_layout_items = static_cast<int>(job->graph.items.size());
    if (job->result) {
      shown_graph = std::move(job->graph);
      shown_layout = std::move(job->result);
      shown_expanded = std::move(job->expanded);
      compute_boxes();
    }
    job.reset();
    return true;
  }

  // Each open group (but the root) around the items below it, outermost first.
  void compute_boxes() {
    boxes.clear();
    std::vector<int> box_of_scope(static_cast<size_t>(tree->scope_count()), -1);
    const float half_w = GraphLayout::kItemWidth / 2, half_h = GraphLayout::kItemHeight / 2;
    for (size_t i = 0; i < shown_graph.items.size(); ++i) {
      const GraphItem& item = shown_graph.items[i];
      const Point c = shown_layout->centre[i];
      // Level 1 is the innermost open group around the item; each level out adds padding and a title row.
      int scope = item.is_group ? tree->scope(item.id).parent : tree->scope_of_node(item.id);
      for (int level = 1; scope > 0; scope = tree->scope(scope).parent, ++level) {
        const float pad = kBoxPadding * static_cast<float>(level), top = (kBoxPadding + kBoxTitle) * static_cast<float>(level);
        const Point lo{c.x - half_w - pad, c.y - half_h - top}, hi{c.x + half_w + pad, c.y + half_h + pad};
        int& b = box_of_scope[static_cast<size_t>(scope)];
        if (b < 0) {
          b = static_cast<int>(boxes.size());
          boxes.push_back({scope, lo, hi});
          continue;
        }
        Box& box = boxes[static_cast<size_t>(b)];
        box.min = {std::min(box.min.x, lo.x), std::min(box.min.y, lo.y)};
        box.max = {std::max(box.max.x, hi.x), std::max(box.max.y, hi.y)};
      }
    }
    bounds_min = shown_layout->min;
    bounds_max = shown_layout->max;
    for (const Box& box : boxes) {
      bounds_min = {std::min(bounds_min.x, box.min.x), std::min(bounds_min.y, box.min.y)};
      bounds_max = {std::max(bounds_max.x, box.max.x), std::max(bounds_max.y, box.max.y)};
    }
    std::stable_sort(boxes.begin(), boxes.end(),
                     [&](const Box& a, const Box& b) { return tree->scope(a.scope).depth < tree->scope(b.scope).depth; });
  }
};

GraphPanel::GraphPanel() : state_(std::make_unique<State>()) {}
GraphPanel::~GraphPanel() = default;

bool GraphPanel::layout_pending() const { return state_->job != nullptr || !state_->shown_layout; }
std::pair<int, double> GraphPanel::last_layout() const { return {state_->last_layout_items, state_->last_layout_ms}; }

// [SECTION] Drawing helpers

namespace {

struct View {
  ImVec2 canvas_min, canvas_max, centre;
  Point pan;
  float zoom;
  ImVec2 to_screen(Point p) const { return ImVec2(centre.x + (p.x - pan.x) * zoom, centre.y + (p.y - pan.y) * zoom); }
  Point to_world(ImVec2 s) const { return {pan.x + (s.x - centre.x) / zoom, pan.y + (s.y - centre.y) / zoom}; }
  bool visible(Point lo, Point hi) const {
    const ImVec2 a = to_screen(lo), b = to_screen(hi);
    return b.x >= canvas_min.x && a.x <= canvas_max.x && b.y >= canvas_min.y && a.y <= canvas_max.y;
  }
};

// The item's label: op type and the last part of the name for a node; the scope's name and size for a group.
std::string item_title(const ReportModel& model, const ScopeTree& tree, const GraphItem& item) {
  if (item.is_group) return tree.scope(item.id).name + " (" + std::to_string(tree.scope(item.id).nodes.size()) + ")";
  return model.node(item.id).op_type;
}
std::string item_subtitle(const ReportModel& model, const GraphItem& item) {
  const std::string& name = model.node(item.id).name;
  const size_t slash = name.find_last_of('/');
  return slash == std::string::npos || slash + 1 == name.size() ? name : name.substr(slash + 1);
}

void draw_arrow_head(ImDrawList* draw, ImVec2 from, ImVec2 to, float size, ImU32 color) {
  const float dx = to.x - from.x, dy = to.y - from.y, length = std::sqrt(dx * dx + dy * dy);
  if (length < 1e-3f) return;
  const float ux = dx / length, uy = dy / length;
  const ImVec2 base(to.x - ux * size, to.y - uy * size);
  draw->AddTriangleFilled(to, ImVec2(base.x - uy * size * 0.5f, base.y + ux * size * 0.5f),
                          ImVec2(base.x + uy * size * 0.5f, base.y - ux * size * 0.5f), color);
}

// The node's figure for the colour metric, as text.
std::string metric_text(GraphMetric metric, const NodeFigures& f) {
  switch (metric) {
    case GraphMetric::Verdict: return f.pending ? "pending" : f.not_run ? "not run" : report::verdict_name(f.verdict);
    case GraphMetric::IsolatedSqnr:
      return f.isolated_nonfinite && std::isnan(f.isolated_sqnr_db) ? "NaN/Inf" : format_sqnr(f.isolated_sqnr_db) + " dB";
    case GraphMetric::PropagatedSqnr:
      return f.propagated_nonfinite && std::isnan(f.propagated_sqnr_db) ? "NaN/Inf" : format_sqnr(f.propagated_sqnr_db) + " dB";
    case GraphMetric::Headroom: return format_number(f.headroom_bits, "%.1f") + " bits";
    case GraphMetric::Overflow: return f.measured_outputs ? std::to_string(f.overflow) + " overflow" : "-";
    case GraphMetric::Flushed: return f.measured_outputs ? format_number(f.flush_to_zero_percent, "%.2g") + " % flushed" : "-";
  }
  return "";
}

void item_tooltip(const ReportModel& model, const ScopeTree& tree, const ScopeOverlay& overlay, const GraphItem& item,
                  const std::string& target, GraphMetric metric) {
  ImGui::BeginTooltip();
  if (item.is_group) {
    const Scope& scope = tree.scope(item.id);
    const VerdictCounts& counts = overlay.scope_verdicts[static_cast<size_t>(item.id)];
    ImGui::Text("%s  (%d nodes)", scope.path.c_str(), static_cast<int>(scope.nodes.size()));
    verdict_badge(overlay.scope_worst_verdict[static_cast<size_t>(item.id)]);
    ImGui::SameLine();
    ImGui::Text("worst; %d unsafe, %d warn, %d safe", counts.unsafe, counts.warn, counts.safe);
    ImGui::TextDisabled("worst bin: %s", overlay.bins[static_cast<size_t>(overlay.scope_bin[static_cast<size_t>(item.id)])].label.c_str());
    const TargetView& view = model.target_view(target);
    for (int node : worst_nodes(scope, overlay, 5)) {
      const BinTone tone = overlay.bins[static_cast<size_t>(overlay.node_bin[static_cast<size_t>(node)])].tone;
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(tone_color(tone)), "  %s#%d %s (%s): %s", tone_mark(tone), node,
                         model.node(node).name.c_str(), model.node(node).op_type.c_str(),
                         metric_text(metric, view.nodes[static_cast<size_t>(node)]).c_str());
    }
    ImGui::TextDisabled("click to open; right-click to list its nodes in the table or close a group around it");
  } else {
    const NodeFigures& f = model.target_view(target).nodes[static_cast<size_t>(item.id)];
    ImGui::Text("#%d %s (%s)", item.id, model.node(item.id).name.c_str(), model.node(item.id).op_type.c_str());
    verdict_badge(f);
    ImGui::SameLine();
    ImGui::TextDisabled("%s", overlay.bins[static_cast<size_t>(overlay.node_bin[static_cast<size_t>(item.id)])].label.c_str());
    ImGui::Text("iso %s dB, prop %s dB, headroom %s bits, overflow %lld, flush %s %%", format_sqnr(f.isolated_sqnr_db).c_str(),
                format_sqnr(f.propagated_sqnr_db).c_str(), format_number(f.headroom_bits, "%.1f").c_str(),
                static_cast<long long>(f.overflow), format_number(f.flush_to_zero_percent, "%.2g").c_str());
  }
  ImGui::EndTooltip();
}

// The legend in the canvas' top-left corner: a swatch, the bin and its node count; empty bins get a grey
// outline only, so a colour on screen always means a node in that bin.
void draw_legend(ImDrawList* draw, ImVec2 at, const ScopeOverlay& overlay, GraphMetric metric, const std::string& target,
                 bool has_back_edges) {
  const float line = ImGui::GetTextLineHeightWithSpacing(), swatch = ImGui::GetTextLineHeight();
  const std::string title = std::string(metric_name(metric)) + ", " + target + " (nodes)";
  float width = ImGui::CalcTextSize(title.c_str()).x;
  std::vector<std::string> labels;
  std::vector<size_t> shown;  // an empty "not measured" (or "pending") bin says nothing: left out
  for (size_t b = 0; b < overlay.bins.size(); ++b) {
    if (overlay.bin_counts[b] == 0 && overlay.bins[b].tone == BinTone::NotMeasured) continue;
    shown.push_back(b);
    labels.push_back(tone_mark(overlay.bins[b].tone) + overlay.bins[b].label + "  " + std::to_string(overlay.bin_counts[b]));
    width = std::max(width, swatch + 6 + ImGui::CalcTextSize(labels.back().c_str()).x);
  }
  const int rows = static_cast<int>(labels.size()) + 1 + (has_back_edges ? 1 : 0);
  draw->AddRectFilled(ImVec2(at.x - 6, at.y - 4), ImVec2(at.x + width + 6, at.y + line * static_cast<float>(rows) + 2),
                      IM_COL32(15, 15, 20, 225), 4);
  draw->AddText(at, IM_COL32(200, 200, 200, 255), title.c_str());
  for (size_t row_index = 0; row_index < labels.size(); ++row_index) {
    const size_t b = shown[row_index];
    const ImVec2 row(at.x, at.y + line * static_cast<float>(row_index + 1));
    const ImVec2 swatch_max(row.x + swatch, row.y + swatch);
    if (overlay.bin_counts[b] > 0) draw->AddRectFilled(row, swatch_max, tone_color(overlay.bins[b].tone), 2);
    else draw->AddRect(row, swatch_max, kNotMeasuredColor, 2);
    draw->AddText(ImVec2(row.x + swatch + 6, row.y),
                  overlay.bin_counts[b] > 0 ? IM_COL32(230, 230, 230, 255) : IM_COL32(130, 130, 130, 255),
                  labels[row_index].c_str());
  }
  if (has_back_edges) {
    const ImVec2 row(at.x, at.y + line * static_cast<float>(labels.size() + 1) + swatch / 2);
    draw->AddLine(row, ImVec2(row.x + swatch, row.y), kBackEdgeColor, 2);
    draw->AddText(ImVec2(row.x + swatch + 6, row.y - swatch / 2), IM_COL32(200, 200, 200, 255), "edge against the layers");
  }
}

}  // namespace

// [SECTION] The panel

void GraphPanel::Draw(const ReportModel& model, DashboardSelection& selection, bool* open) {
  if (!ImGui::Begin("Graph", open)) return ImGui::End();
  State& s = *state_;
  if (selection.target.empty() || model.node_count() == 0) {
    ImGui::TextDisabled("the report has no nodes or no target format");
    return ImGui::End();
  }
  // The tree, edges and a first layout, once per graph: a running audit's next snapshot of the same graph
  // only recolours it.
  if (s.model != model.identity()) {
    s.model = model.identity();
    s.overlay.reset();
  }
  if (!s.tree || s.structure_hash != model.structure_hash()) {
    s.stop_job();
    s.structure_hash = model.structure_hash();
    std::vector<std::string> names;
    names.reserve(static_cast<size_t>(model.node_count()));
    for (int i = 0; i < model.node_count(); ++i) names.push_back(model.node(i).name);
    s.tree = std::make_unique<ScopeTree>(names);
    s.edges = node_edges(model);
    s.expanded = expand_all_at_start ? full_expansion(*s.tree) : initial_expansion(*s.tree, kInitialItemBudget);
    s.shown_layout.reset();
    s.fit_pending = true;
    s.first_view = true;
    s.start_layout();
  }
  if (!s.overlay || s.overlay_target != selection.target || s.overlay_metric != metric) {
    s.overlay = scope_overlay(*s.tree, model, selection.target, metric);
    s.overlay_target = selection.target;
    s.overlay_metric = metric;
  }
  const ScopeOverlay& overlay = *s.overlay;
  const bool landed = s.collect_layout();

  // Toolbar: metric, view and expansion controls.
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 11);
  if (ImGui::BeginCombo("colour by", metric_name(metric))) {
    for (GraphMetric m : kGraphMetrics)
      if (ImGui::Selectable(metric_name(m), m == metric)) metric = m;
    ImGui::EndCombo();
  }
  if (const report::FixReport* fix = model.fix()) {
    ImGui::SameLine();
    ImGui::TextColored(fix_keep_color(), "[KEEP]");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("outlined: the %zu node%s fix keeps in FP32 (and the groups holding them)", fix->keep.size(),
                        fix->keep.size() == 1 ? "" : "s");
  }
  ImGui::SameLine();
  if (ImGui::Button("Fit")) s.fit_pending = true;
  ImGui::SameLine();
  if (ImGui::Button("Open all")) {
    s.expanded = full_expansion(*s.tree);
    s.fit_when_landed = true;
    s.start_layout();
  }
  ImGui::SameLine();
  if (ImGui::Button("Close all")) {
    s.expanded.assign(s.expanded.size(), 0);
    s.expanded[0] = 1;
    s.fit_when_landed = true;
    s.start_layout();
  }
  ImGui::SameLine();
  if (s.job) {
    const float fraction = s.job->progress.fraction.load(std::memory_order_relaxed);
    ImGui::TextDisabled("laying out %d items: %.0f%%", static_cast<int>(s.job->graph.items.size()), 100 * fraction);
    ImGui::SameLine();
    if (s.shown_layout && ImGui::SmallButton("cancel")) {
      s.stop_job();
      s.expanded = s.shown_expanded;
      s.fit_when_landed = false;
    }
  } else if (s.shown_layout) {
    ImGui::TextDisabled("%d items, %d layers (%d nodes); drag to pan, wheel to zoom, click a group to open it",
                        static_cast<int>(s.shown_graph.items.size()), s.shown_layout->layer_count, model.node_count());
  }

  // The canvas claims the rest of the window so that hover, clicks and the wheel belong to it.
  const ImVec2 canvas_min = ImGui::GetCursorScreenPos();
  ImVec2 canvas_size = ImGui::GetContentRegionAvail();
  canvas_size.x = std::max(canvas_size.x, 100.0f);
  canvas_size.y = std::max(canvas_size.y, 100.0f);
  ImGui::InvisibleButton("graph canvas", canvas_size,
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight | ImGuiButtonFlags_MouseButtonMiddle);
  const bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
  const ImVec2 canvas_max(canvas_min.x + canvas_size.x, canvas_min.y + canvas_size.y);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(canvas_min, canvas_max, IM_COL32(20, 20, 26, 255));

  if (!s.shown_layout) {
    // First layout still running: a progress bar in the middle of the canvas.
    const float fraction = s.job ? s.job->progress.fraction.load(std::memory_order_relaxed) : 0.0f;
    const ImVec2 centre((canvas_min.x + canvas_max.x) / 2, (canvas_min.y + canvas_max.y) / 2);
    const float half = std::min(200.0f, canvas_size.x / 3);
    draw->AddRect(ImVec2(centre.x - half, centre.y - 6), ImVec2(centre.x + half, centre.y + 6), IM_COL32(160, 160, 160, 255));
    draw->AddRectFilled(ImVec2(centre.x - half, centre.y - 6), ImVec2(centre.x - half + 2 * half * fraction, centre.y + 6),
                        IM_COL32(90, 170, 250, 255));
    draw->AddText(ImVec2(centre.x - half, centre.y - 10 - ImGui::GetTextLineHeight()), IM_COL32(200, 200, 200, 255),
                  "laying out the graph ...");
    return ImGui::End();
  }
  const GraphLayout& layout = *s.shown_layout;
  const VisibleGraph& graph = s.shown_graph;
  const ScopeTree& tree = *s.tree;

  // View: fit, keep the anchor where it was, pan to a selection made elsewhere, then pan and zoom input.
  const ImVec2 centre((canvas_min.x + canvas_max.x) / 2, (canvas_min.y + canvas_max.y) / 2);
  const float world_w = std::max(s.bounds_max.x - s.bounds_min.x, 1.0f), world_h = std::max(s.bounds_max.y - s.bounds_min.y, 1.0f);
  const float fit_zoom = std::clamp(std::min((canvas_size.x - 20) / world_w, (canvas_size.y - 20) / world_h), 1e-4f, 1.0f);
  const int selected_item = selection.node >= 0 && selection.node < model.node_count()
                                ? graph.item_of_node[static_cast<size_t>(selection.node)]
                                : -1;
  if (landed && s.fit_when_landed) {
    s.fit_when_landed = false;
    s.fit_pending = true;
  }
  if (s.fit_pending) {
    s.fit_pending = false;
    s.anchor_node = -1;
    s.zoom = fit_zoom;
    s.pan = {(s.bounds_min.x + s.bounds_max.x) / 2, (s.bounds_min.y + s.bounds_max.y) / 2};
    if (s.first_view && !fit_all_at_start && fit_zoom < kReadableZoom) {
      // A graph too large to read whole opens at a zoom where labels show, around the selection (or at the
      // top); Fit shows it all.
      s.zoom = kReadableZoom;
      const Point focus = selected_item >= 0 ? layout.centre[static_cast<size_t>(selected_item)] : layout.centre.front();
      s.pan = {focus.x, selected_item >= 0 ? focus.y : s.bounds_min.y + (canvas_size.y / 2 - 10) / s.zoom};
      s.last_selection = selection.node;
    }
    s.first_view = false;
  }
  if (landed && s.anchor_node >= 0) {
    const Point c = layout.centre[static_cast<size_t>(graph.item_of_node[static_cast<size_t>(s.anchor_node)])];
    s.pan = {c.x - (s.anchor_screen.x - centre.x) / s.zoom, c.y - (s.anchor_screen.y - centre.y) / s.zoom};
    s.anchor_node = -1;
  }
  View view{canvas_min, canvas_max, centre, s.pan, s.zoom};
  if (selection.node != s.last_selection) {
    s.last_selection = selection.node;
    if (selected_item >= 0) {
      const Point c = layout.centre[static_cast<size_t>(selected_item)];
      const ImVec2 at = view.to_screen(c);
      if (at.x < canvas_min.x || at.x > canvas_max.x || at.y < canvas_min.y || at.y > canvas_max.y) s.pan = c;
    }
  }
  ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0) {
    const Point before = view.to_world(io.MousePos);
    s.zoom = std::clamp(s.zoom * std::pow(1.2f, io.MouseWheel), std::min(kMinZoom, fit_zoom), kMaxZoom);
    s.pan = {before.x - (io.MousePos.x - centre.x) / s.zoom, before.y - (io.MousePos.y - centre.y) / s.zoom};
  }
  if (ImGui::IsItemActivated()) s.dragging = false;
  if (active && (ImGui::IsMouseDragging(ImGuiMouseButton_Left) || ImGui::IsMouseDragging(ImGuiMouseButton_Middle) ||
                 ImGui::IsMouseDragging(ImGuiMouseButton_Right))) {
    s.dragging = true;
    s.pan = {s.pan.x - io.MouseDelta.x / s.zoom, s.pan.y - io.MouseDelta.y / s.zoom};
  }
  view = View{canvas_min, canvas_max, centre, s.pan, s.zoom};

  draw->PushClipRect(canvas_min, canvas_max, true);
  const float line_height = ImGui::GetTextLineHeight();
  const bool show_labels = GraphLayout::kItemHeight * s.zoom >= line_height + 2;
  const bool show_two_lines = GraphLayout::kItemHeight * s.zoom >= 2 * line_height + 6;
  const bool show_value = GraphLayout::kItemHeight * s.zoom >= 3 * line_height + 8;  // zoomed in: the figure too

  // Items under two pixels tall: one dot per occupied pixel in its worst bin's colour, no group boxes and no
  // edges but the selection's (thousands of sub-pixel shapes cost the rasteriser and show nothing more).
  const bool dots = GraphLayout::kItemHeight * s.zoom < 2;

  // Open groups: translucent boxes with their name above, outermost first. Clicking the title closes one.
  int hovered_box = -1;
  std::vector<std::pair<ImVec2, ImVec2>> titles;  // drawn so far, on screen
  for (size_t b = 0; b < s.boxes.size() && !dots; ++b) {
    const Box& box = s.boxes[b];
    if (!view.visible(box.min, box.max)) continue;
    const ImVec2 lo = view.to_screen(box.min), hi = view.to_screen(box.max);
    const int depth = tree.scope(box.scope).depth;
    const float box_rounding = GraphLayout::kItemHeight * s.zoom < 6 ? 0.0f : 6 * s.zoom;  // as the items
    // A box over much of the canvas gets its outline only: layers of translucent fill over the whole canvas
    // are what a software rasteriser spends its time on, and nested outlines already show the nesting.
    const float shown_w = std::min(hi.x, canvas_max.x) - std::max(lo.x, canvas_min.x);
    const float shown_h = std::min(hi.y, canvas_max.y) - std::max(lo.y, canvas_min.y);
    if (shown_w * shown_h < 0.25f * canvas_size.x * canvas_size.y)
      draw->AddRectFilled(lo, hi, IM_COL32(120, 130, 160, 18 + 6 * std::min(depth, 5)), box_rounding);
    draw->AddRect(lo, hi, IM_COL32(140, 150, 180, 110), box_rounding);
    const ImVec2 title_max(hi.x, lo.y + kBoxTitle * s.zoom);
    if (hovered && io.MousePos.x >= lo.x && io.MousePos.x <= hi.x && io.MousePos.y >= lo.y && io.MousePos.y <= title_max.y)
      hovered_box = static_cast<int>(b);
    if (kBoxTitle * s.zoom >= line_height) {
      // Boxes of groups whose nodes interleave overlap; a title that would land on an earlier one goes to its
      // box's top-right corner, or else right of the titles in the way.
      const char* name = tree.scope(box.scope).name.c_str();
      const ImVec2 size = ImGui::CalcTextSize(name);
      const auto collides = [&](ImVec2 at) {
        return std::any_of(titles.begin(), titles.end(), [&](const auto& t) {
          return at.x < t.second.x && at.x + size.x > t.first.x && at.y < t.second.y && at.y + size.y > t.first.y;
        });
      };
      ImVec2 at(std::max(lo.x, canvas_min.x) + 4, lo.y + 1);  // a box wider than the canvas keeps its title on it
      const float right = std::min(hi.x, canvas_max.x) - 4 - size.x;
      if (collides(at) && !collides(ImVec2(right, at.y))) at.x = right;
      for (bool moved = true; moved;) {
        moved = false;
        for (const auto& [title_lo, title_hi] : titles)
          if (at.x < title_hi.x && at.x + size.x > title_lo.x && at.y < title_hi.y && at.y + size.y > title_lo.y) {
            at.x = title_hi.x + 8;
            moved = true;
          }
      }
      titles.emplace_back(at, ImVec2(at.x + size.x, at.y + size.y));
      const ImVec4 clip(lo.x, lo.y, hi.x, title_max.y);
      draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), at, IM_COL32(190, 195, 215, 255), name, nullptr, 0, &clip);
    }
  }

  // Edges: grey, inputs of the selection white, its outputs blue; back edges violet. Zoomed far out they
  // are drawn without anti-aliasing (a fraction of the vertices).
  const bool tiny_edges = GraphLayout::kItemHeight * s.zoom < 6;

  const ImDrawListFlags edge_flags_before = draw->Flags;
  if (tiny_edges) draw->Flags &= ~ImDrawListFlags_AntiAliasedLines;
  const bool arrows = s.zoom >= 0.25f;
  std::vector<ImVec2> points;
  for (int pass = 0; pass < 2; ++pass) {  // highlighted edges on top
    for (const EdgeRoute& route : layout.routes) {
      const bool into = route.to == selected_item, out_of = route.from == selected_item;
      if ((into || out_of) != (pass == 1)) continue;
      if (dots && !(into || out_of)) continue;  // sub-pixel items: edges would only be noise
      if (!view.visible(route.min, route.max)) continue;
      points.clear();
      for (const Point& p : route.points) points.push_back(view.to_screen(p));
      const ImU32 color = into ? kInputEdgeColor : out_of ? kOutputEdgeColor : route.reversed ? kBackEdgeColor : kEdgeColor;
      const float thickness = (into || out_of) ? 2.5f : 1.2f;
      draw->AddPolyline(points.data(), static_cast<int>(points.size()), color, ImDrawFlags_None, thickness);
      if (arrows) draw_arrow_head(draw, points[points.size() - 2], points.back(), 8 * std::min(s.zoom, 1.5f) + 2, color);
    }
  }

  draw->Flags = edge_flags_before;

  // Items: filled with their bin's colour, groups with a second outline and a verdict bar along the bottom.
  int hovered_item = -1;
  const float half_w = GraphLayout::kItemWidth / 2, half_h = GraphLayout::kItemHeight / 2;
  // Zoomed far out, items are a few pixels: square corners and no anti-aliasing cost a fraction of the
  // vertices and look the same.
  const bool tiny = GraphLayout::kItemHeight * s.zoom < 6;
  const float rounding = tiny ? 0.0f : std::min(6 * s.zoom, 6.0f);
  const ImDrawListFlags flags_before = draw->Flags;
  if (tiny) draw->Flags &= ~(ImDrawListFlags_AntiAliasedFill | ImDrawListFlags_AntiAliasedLines);
  if (dots) {
    struct Dot {
      int64_t pixel;
      int bin, item;
    };
    std::vector<Dot> occupied;
    for (size_t i = 0; i < graph.items.size(); ++i) {
      const Point c = layout.centre[i];
      const ImVec2 at = view.to_screen(c);
      if (at.x < canvas_min.x || at.x > canvas_max.x || at.y < canvas_min.y || at.y > canvas_max.y) continue;
      const GraphItem& item = graph.items[i];
      const int bin = item.is_group ? overlay.scope_bin[static_cast<size_t>(item.id)] : overlay.node_bin[static_cast<size_t>(item.id)];
      occupied.push_back({static_cast<int64_t>(at.y) * 100000 + static_cast<int64_t>(at.x), bin, static_cast<int>(i)});
      if (hovered && std::fabs(io.MousePos.x - at.x) <= 3 && std::fabs(io.MousePos.y - at.y) <= 3) hovered_item = static_cast<int>(i);
    }
    // Per pixel the worst bin (then the first item) wins.
    std::sort(occupied.begin(), occupied.end(), [](const Dot& a, const Dot& b) {
      return a.pixel != b.pixel ? a.pixel < b.pixel : a.bin != b.bin ? a.bin < b.bin : a.item < b.item;
    });
    for (size_t k = 0; k < occupied.size(); ++k) {
      if (k > 0 && occupied[k].pixel == occupied[k - 1].pixel) continue;
      const ImVec2 at = view.to_screen(layout.centre[static_cast<size_t>(occupied[k].item)]);
      const float x = std::floor(at.x), y = std::floor(at.y);
      draw->AddRectFilled(ImVec2(x - 1, y), ImVec2(x + 2, y + 2), tone_color(overlay.bins[static_cast<size_t>(occupied[k].bin)].tone));
    }
    if (selected_item >= 0) {
      const ImVec2 at = view.to_screen(layout.centre[static_cast<size_t>(selected_item)]);
      draw->AddRect(ImVec2(at.x - 5, at.y - 5), ImVec2(at.x + 5, at.y + 5), IM_COL32(255, 255, 255, 255), 0, 0, 2);
    }
  }
  for (size_t i = 0; i < graph.items.size() && !dots; ++i) {
    const Point c = layout.centre[i];
    if (!view.visible({c.x - half_w, c.y - half_h}, {c.x + half_w, c.y + half_h})) continue;
    const GraphItem& item = graph.items[i];
    const ImVec2 lo = view.to_screen({c.x - half_w, c.y - half_h}), hi = view.to_screen({c.x + half_w, c.y + half_h});
    const int bin = item.is_group ? overlay.scope_bin[static_cast<size_t>(item.id)] : overlay.node_bin[static_cast<size_t>(item.id)];
    const BinTone tone = overlay.bins[static_cast<size_t>(bin)].tone;
    if (item.is_group) {
      const float offset = std::max(2.0f, 4 * s.zoom);
      draw->AddRectFilled(ImVec2(lo.x + offset, lo.y + offset), ImVec2(hi.x + offset, hi.y + offset), IM_COL32(70, 70, 85, 255), rounding);
    }
    draw->AddRectFilled(lo, hi, tone_color(tone), rounding);
    if (item.is_group && show_labels) {
      // Stacked verdict bar: unsafe, warn, safe shares of the group's nodes.
      const VerdictCounts& counts = overlay.scope_verdicts[static_cast<size_t>(item.id)];
      const float total = static_cast<float>(counts.unsafe + counts.warn + counts.safe + counts.pending);
      const float bar_h = std::max(3.0f, 5 * s.zoom);
      float x = lo.x + rounding;
      const float span = hi.x - lo.x - 2 * rounding;
      draw->AddRectFilled(ImVec2(x, hi.y - bar_h - 2), ImVec2(x + span, hi.y - 2), IM_COL32(20, 20, 26, 255));
      const std::pair<int, report::Verdict> shares[] = {{counts.unsafe, report::Verdict::Unsafe},
                                                        {counts.warn, report::Verdict::Warn},
                                                        {counts.safe, report::Verdict::Safe}};
      for (const auto& [count, verdict] : shares) {
        if (count == 0) continue;
        const float w = span * static_cast<float>(count) / total;
        draw->AddRectFilled(ImVec2(x, hi.y - bar_h - 1), ImVec2(x + w, hi.y - 3), ImGui::GetColorU32(verdict_color(verdict)));
        x += w;
      }
    }
    // Fix's keep-set: a ring in its colour outside the box, around a closed group holding one too.
    const bool kept_by_fix =
        model.fix() && (item.is_group ? std::any_of(tree.scope(item.id).nodes.begin(), tree.scope(item.id).nodes.end(),
                                                    [&](int n) { return model.kept_by_fix(n); })
                                      : model.kept_by_fix(item.id) != nullptr);
    if (kept_by_fix)
      draw->AddRect(ImVec2(lo.x - 6, lo.y - 6), ImVec2(hi.x + 6, hi.y + 6), ImGui::GetColorU32(fix_keep_color()),
                    rounding, 0, 3);
    if (static_cast<int>(i) == selected_item) draw->AddRect(ImVec2(lo.x - 3, lo.y - 3), ImVec2(hi.x + 3, hi.y + 3), IM_COL32(255, 255, 255, 255), rounding, 0, 3);
    else if (item.is_group) draw->AddRect(lo, hi, IM_COL32(230, 230, 240, 200), rounding, 0, 1.5f);
    if (show_labels) {
      const ImVec4 clip(lo.x + 3, lo.y, hi.x - 3, hi.y);
      const bool kept_fp32 =
          !item.is_group && model.target_view(selection.target).nodes[static_cast<size_t>(item.id)].kept_fp32;
      const std::string title = std::string(tone_mark(tone)) + (kept_fp32 ? "[FP32] " : "") +
                                (kept_by_fix ? "[KEEP] " : "") + item_title(model, tree, item);
      const float text_y = show_two_lines ? lo.y + 3 : (lo.y + hi.y - line_height) / 2;
      draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(lo.x + 6, text_y), IM_COL32(0, 0, 0, 255), title.c_str(),
                    nullptr, 0, &clip);
      if (show_two_lines && !item.is_group)  // a group's second line is its verdict bar
        draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(lo.x + 6, text_y + line_height + 1), IM_COL32(30, 30, 40, 255),
                      item_subtitle(model, item).c_str(), nullptr, 0, &clip);
      if (show_value && !item.is_group)
        draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(lo.x + 6, text_y + 2 * line_height + 2), IM_COL32(30, 30, 40, 255),
                      metric_text(metric, model.target_view(selection.target).nodes[static_cast<size_t>(item.id)]).c_str(),
                      nullptr, 0, &clip);
    }
    if (hovered && io.MousePos.x >= lo.x && io.MousePos.x <= hi.x && io.MousePos.y >= lo.y && io.MousePos.y <= hi.y)
      hovered_item = static_cast<int>(i);
  }
  draw->Flags = flags_before;
  draw->PopClipRect();
  draw_legend(draw, ImVec2(canvas_min.x + 10, canvas_min.y + 8), overlay, metric, selection.target,
              std::any_of(layout.routes.begin(), layout.routes.end(), [](const EdgeRoute& r) { return r.reversed; }));

  // Clicks (a press and release without dragging): a node selects, a group opens, a box title closes.
  const auto toggle_group = [&](int scope, bool expand, int anchor_item) {
    s.expanded[static_cast<size_t>(scope)] = expand ? 1 : 0;
    s.anchor_node = tree.scope(scope).nodes.front();
    s.anchor_screen = anchor_item >= 0 ? view.to_screen(layout.centre[static_cast<size_t>(anchor_item)]) : io.MousePos;
    s.start_layout();
  };
  if (hovered_item >= 0 && !active) item_tooltip(model, tree, overlay, graph.items[static_cast<size_t>(hovered_item)], selection.target, metric);
  else if (hovered_box >= 0 && !active) ImGui::SetTooltip("%s: click to close", tree.scope(s.boxes[static_cast<size_t>(hovered_box)].scope).path.c_str());
  if (hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && !s.dragging) {
    if (hovered_item >= 0) {
      const GraphItem& item = graph.items[static_cast<size_t>(hovered_item)];
      if (item.is_group) toggle_group(item.id, true, hovered_item);
      else selection.select_node(item.id);
      if (!item.is_group) s.last_selection = item.id;  // selected here: no need to pan to it
    } else if (hovered_box >= 0) {
      toggle_group(s.boxes[static_cast<size_t>(hovered_box)].scope, false, -1);
    }
  }
  // Right-click: list a group's nodes in the (sortable) node table, or close any open group around the item.
  int& context_item = s.context_item;
  if (hovered && hovered_item >= 0 && ImGui::IsMouseReleased(ImGuiMouseButton_Right) && !s.dragging) {
    context_item = hovered_item;
    ImGui::OpenPopup("graph item");
  }
  if (ImGui::BeginPopup("graph item")) {
    if (context_item >= 0 && context_item < static_cast<int>(graph.items.size())) {
      const GraphItem& item = graph.items[static_cast<size_t>(context_item)];
      if (item.is_group && ImGui::Selectable(("list the nodes of " + tree.scope(item.id).path + " in the table").c_str()))
        selection.table_filter_request = scope_filter(tree, item.id);
      const auto pin_group = [&](int group) {
        const Scope& scope = tree.scope(group);
        pin_toggle(model, selection, scope.nodes, scope.path + " (" + std::to_string(scope.nodes.size()) + " nodes)",
                   false);
      };
      const int around = item.is_group ? tree.scope(item.id).parent : tree.scope_of_node(item.id);
      if (item.is_group)
        pin_group(item.id);
      else
        pin_toggle(model, selection, {item.id}, "", false);
      if (around > 0) pin_group(around);
      int scope = around;
      if (scope <= 0) ImGui::TextDisabled("not inside an open group");
      for (; scope > 0; scope = tree.scope(scope).parent) {
        const std::string label = "close " + tree.scope(scope).path;
        if (ImGui::Selectable(label.c_str())) toggle_group(scope, false, context_item);
      }
    }
    ImGui::EndPopup();
  }
  ImGui::End();
}

}  // namespace mpa::ui
