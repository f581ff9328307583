// Window-free logic behind the graph view: name-scope grouping, which items (nodes and collapsed groups)
// are visible for a set of open groups and the edges between them, the layered layout of those items, and
// the metric overlay (which colour bin a node or group falls in). Nothing here touches ImGui, so
// tests/ui/test_graph_model.cpp checks it without a window, and the layout runs on a worker thread.
//   [SECTION] name scopes
//   [SECTION] visible graph
//   [SECTION] layered layout
//   [SECTION] metric overlay
//   [SECTION] Model Explorer node data
#pragma once
#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ui/report_model.h"

namespace mpa::ui {

// [SECTION] Name scopes
//
// Node names split on '/' into scopes, as PyTorch exports them ("/encoder/layer.0/attention/MatMul" lies in
// scope /encoder/layer.0/attention). Scope 0 is the root. A scope's children (sub-scopes and nodes) are
// kept in the order of their first node in execution order. A scope with more than `max_children`
// children is split into consecutive parts of at most that many, so no group is too large to open.

struct ScopeChild {
  bool is_scope;
  int id;  // scope id or node index
};

struct Scope {
  std::string name;  // last path segment, e.g. "layer.0"; "part 2/3" for a split part
  std::string path;  // e.g. "/encoder/layer.0"; the root's is ""
  int parent = -1;
  int depth = 0;  // root 0
  bool is_part = false;  // made by splitting a large scope, not named in the model
  std::vector<ScopeChild> children;
  std::vector<int> nodes;  // every node below, at any depth, in execution order
};

class ScopeTree {
 public:
  static constexpr int kDefaultMaxChildren = 400;
  explicit ScopeTree(const std::vector<std::string>& node_names, int max_children = kDefaultMaxChildren);

  const Scope& scope(int id) const { return scopes_[static_cast<size_t>(id)]; }
  int scope_count() const { return static_cast<int>(scopes_.size()); }
  // The innermost scope that holds the node directly.
  int scope_of_node(int node) const { return scope_of_node_[static_cast<size_t>(node)]; }
  // -1 when there is no scope with that path.
  int find(const std::string& path) const;
  // Whether `scope` is `ancestor` or lies below it.
  bool is_within(int scope, int ancestor) const;

 private:
  void split_large(int id, int max_children);
  std::vector<Scope> scopes_;
  std::vector<int> scope_of_node_;
};

// The segments of a name's scope: "/a/b/Op" -> {"a", "b"}; "Op" -> {}. Empty segments are skipped.
std::vector<std::string> scope_segments(const std::string& node_name);

// A node-filter term (ui/view_model.h's language) that matches exactly the nodes named inside the scope,
// with or without the leading '/': e.g. "^/?encoder/layer\.0/". A split part stands for its named scope.
std::string scope_filter(const ScopeTree& tree, int scope);

// Which scopes are open (root always). A fresh state opens whole levels of scopes, shallowest first, while the
// visible items stay within `budget` (a group that would be the only item opens anyway): small models open
// fully, large ones start collapsed.
std::vector<char> initial_expansion(const ScopeTree& tree, int budget);
std::vector<char> full_expansion(const ScopeTree& tree);

// [SECTION] Visible graph

struct GraphItem {
  bool is_group;
  int id;          // scope id for a collapsed group, node index otherwise
  int first_node;  // the group's first node in execution order (the node itself for a node)
};

struct VisibleGraph {
  std::vector<GraphItem> items;             // ordered by first_node
  std::vector<std::pair<int, int>> edges;   // item indices, producer -> consumer, unique; from > to only via groups
  std::vector<int> item_of_node;            // the node itself or its outermost collapsed group
};

// Producer -> consumer node pairs from the report's inputs and outputs (unique, sorted).
std::vector<std::pair<int, int>> node_edges(const ReportModel& model);

VisibleGraph visible_graph(const ScopeTree& tree, const std::vector<char>& expanded,
                           const std::vector<std::pair<int, int>>& node_edges);

// [SECTION] Layered layout
//
// Sugiyama-style, top to bottom: edges oriented along item order (a back edge, only possible between
// collapsed groups, is reversed for layering and flagged); longest-path layering with sources pulled down
// next to their first consumer; dummy vertices on edges that span layers; barycentre ordering in alternating
// sweeps, keeping the order with the fewest crossings; x positions that stay in layer order and sit as close to their neighbours as spacing allows.
// Deterministic: the same input gives the same positions.

struct Point {
  float x = 0, y = 0;
};

struct LayoutInput {
  int item_count = 0;
  std::vector<std::pair<int, int>> edges;  // as in VisibleGraph
};

struct EdgeRoute {
  int from, to;               // items, as in the input edge
  bool reversed;              // a back edge: drawn against the layer order
  std::vector<Point> points;  // from the source's bottom to the target's top (reversed: the other way round)
  Point min, max;             // bounding box, for culling
};

struct GraphLayout {
  static constexpr float kItemWidth = 180, kItemHeight = 44, kLayerGap = 56, kItemGap = 24, kDummyWidth = 8;
  std::vector<Point> centre;  // by item
  std::vector<int> layer;     // by item
  std::vector<EdgeRoute> routes;
  Point min, max;             // bounds of every item and route
  int layer_count = 0, dummy_count = 0;
  int64_t initial_crossings = 0, crossings = 0;  // between adjacent layers, in execution order and as laid out
};

// Shared with the worker: the fraction done so far, and a request to stop.
struct LayoutProgress {
  std::atomic<float> fraction{0};
  std::atomic<bool> cancel{false};
};

// nullopt when cancelled through `progress`.
std::optional<GraphLayout> layered_layout(const LayoutInput& input, LayoutProgress* progress = nullptr);

// [SECTION] Metric overlay
//
// Each metric splits nodes into bins ordered worst first; a bin has a tone that decides its colour (the
// verdict colours where the bin is one, so that "unsafe" looks the same everywhere). A group takes the worst
// bin of the nodes below it.

enum class GraphMetric { Verdict, IsolatedSqnr, PropagatedSqnr, Headroom, Overflow, Flushed };
inline constexpr GraphMetric kGraphMetrics[] = {GraphMetric::Verdict,  GraphMetric::IsolatedSqnr, GraphMetric::PropagatedSqnr,
                                                GraphMetric::Headroom, GraphMetric::Overflow,     GraphMetric::Flushed};
const char* metric_name(GraphMetric metric);

enum class BinTone { Unsafe, Warn, Safe, Good, NotMeasured };

struct MetricBin {
  std::string label;
  BinTone tone;
};

// The bins of a metric for a target, with the report's thresholds in their labels.
std::vector<MetricBin> metric_bins(GraphMetric metric, const report::Thresholds& thresholds, const std::string& target);
// A node's bin index into metric_bins().
int metric_bin(GraphMetric metric, const NodeFigures& figures, const report::Thresholds& thresholds,
               const std::string& target);

// Per-target overlay of a whole tree: each node's bin, each scope's worst bin and verdict counts.
struct VerdictCounts {
  int unsafe = 0, warn = 0, safe = 0, pending = 0;  // pending: not run yet by a running audit, or not run at all
};
struct ScopeOverlay {
  std::vector<MetricBin> bins;
  std::vector<int> node_bin;          // by node
  std::vector<int> scope_bin;         // by scope: the worst (lowest) bin below it
  std::vector<VerdictCounts> scope_verdicts;
  std::vector<report::Verdict> scope_worst_verdict;
  std::vector<int> bin_counts;        // nodes per bin
};
ScopeOverlay scope_overlay(const ScopeTree& tree, const ReportModel& model, const std::string& target, GraphMetric metric);

// The `count` nodes below a scope in the worst bins, worst first, ties in execution order: what a collapsed
// group hides that matters most.
std::vector<int> worst_nodes(const Scope& scope, const ScopeOverlay& overlay, size_t count);

// A tone's colour as RGB (the verdict tones match the dashboard's verdict colours).
struct Rgb {
  int r, g, b;
};
Rgb tone_rgb(BinTone tone);
std::string hex_color(Rgb rgb);  // "#rrggbb"
// A node's figure for the metric: verdict as 0 safe, 1 warn, 2 unsafe; NaN where not measured (or pending).
double metric_value(GraphMetric metric, const NodeFigures& figures);

// [SECTION] Model Explorer node data
//
// Per-node figures in the node-data JSON that Google's Model Explorer overlays on a graph:
// {graph_id: {results: {node name: {value, bgColor}}, thresholds: [{value, bgColor}, ...]}}. Each result's
// colour is its bin's, as in our graph view; nodes without a figure are left out. Thresholds (ascending
// upper bounds) are given for the verdict (0/1/2) and SQNR metrics.
report::json model_explorer_node_data(const ReportModel& model, const std::string& target, GraphMetric metric,
                                      const std::string& graph_id);

}  // namespace mpa::ui
