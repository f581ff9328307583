// The graph view's window-free model (ui/graph_model.h): name-scope grouping and splitting, which groups
// start open, the visible graph with collapsed groups, the layered layout (no edge goes up, no overlap,
// deterministic, cancellable), the metric overlay, and the Model Explorer node-data export. Also the
// dashboard's view names and where imgui.ini is kept. No X server or OpenGL needed.
#include <gtest/gtest.h>

#include <cstdint>

#include "ui/graph_model.h"
#include "ui/view_model.h"

namespace mpa::ui {
namespace {

const std::string kTarget = "fp16";

// "t<i>", built by appending (GCC 12 warns falsely about "t" + std::string, GCC PR 105651).
std::string tensor_name(size_t i) {
  std::string name = "t";
  name += std::to_string(i);
  return name;
}

// A report whose nodes form a chain in execution order (each reads the previous one's output) plus the
// extra edges given; verdicts per node.
ReportModel chain_model(const std::vector<std::string>& names, const std::vector<report::Verdict>& verdicts,
                        const std::vector<std::pair<int, int>>& extra_edges = {}) {
  report::Report r;
  r.config.targets = {kTarget};
  for (size_t i = 0; i < names.size(); ++i) {
    report::NodeStats node;
    node.index = static_cast<int64_t>(i);
    node.name = names[i];
    node.op_type = "Op";
    node.outputs = {tensor_name(i)};
    if (i > 0) node.inputs.push_back(tensor_name(i - 1));
    node.targets[kTarget].verdict = i < verdicts.size() ? verdicts[i] : report::Verdict::Safe;
    r.nodes.push_back(std::move(node));
  }
  for (const auto& [from, to] : extra_edges) r.nodes[static_cast<size_t>(to)].inputs.push_back(tensor_name(static_cast<size_t>(from)));
  return ReportModel(std::move(r), "synthetic.json");
}

std::vector<int> node_children(const Scope& scope) {
  std::vector<int> nodes;
  for (const ScopeChild& c : scope.children)
    if (!c.is_scope) nodes.push_back(c.id);
  return nodes;
}

// [SECTION] Name scopes

TEST(ScopeSegmentsTest, SplitsOnSlashesAndDropsTheNodesOwnName) {
  EXPECT_EQ(scope_segments("/encoder/layer.0/attention/MatMul"), (std::vector<std::string>{"encoder", "layer.0", "attention"}));
  EXPECT_EQ(scope_segments("mask/scale"), (std::vector<std::string>{"mask"}));
  EXPECT_TRUE(scope_segments("MatMul_3").empty());
  EXPECT_TRUE(scope_segments("/MatMul").empty());
  EXPECT_EQ(scope_segments("a//b/c"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(scope_segments("").empty());
}

TEST(ScopeTreeTest, GroupsPyTorchNamesByScope) {
  const ScopeTree tree({"/encoder/layer.0/attention/MatMul", "/encoder/layer.0/attention/Softmax", "/encoder/layer.0/Add",
                        "/encoder/layer.1/attention/MatMul", "/pooler/Tanh", "output"});
  const int encoder = tree.find("/encoder"), layer0 = tree.find("/encoder/layer.0"), attention0 = tree.find("/encoder/layer.0/attention");
  const int layer1 = tree.find("/encoder/layer.1"), pooler = tree.find("/pooler");
  ASSERT_GT(encoder, 0);
  ASSERT_GT(layer0, 0);
  ASSERT_GT(attention0, 0);
  ASSERT_GT(layer1, 0);
  ASSERT_GT(pooler, 0);
  EXPECT_EQ(tree.scope(encoder).name, "encoder");
  EXPECT_EQ(tree.scope(attention0).name, "attention");
  EXPECT_EQ(tree.scope(attention0).depth, 3);
  EXPECT_EQ(tree.scope(attention0).parent, layer0);
  EXPECT_EQ(tree.scope(attention0).nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(tree.scope(layer0).nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(tree.scope(encoder).nodes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(tree.scope(0).nodes.size(), 6u);
  EXPECT_EQ(tree.scope_of_node(2), layer0);
  EXPECT_EQ(tree.scope_of_node(5), 0);
  EXPECT_EQ(node_children(tree.scope(0)), (std::vector<int>{5}));
  EXPECT_TRUE(tree.is_within(attention0, encoder));
  EXPECT_FALSE(tree.is_within(pooler, encoder));
  EXPECT_EQ(tree.find("/nope"), -1);
}

TEST(ScopeTreeTest, ScopeFilterMatchesExactlyTheScopesNodes) {
  const std::vector<std::string> names{"/encoder/layer.0/Add", "/encoder/layer.0/attention/MatMul", "/encoder/layer10/Add",
                                       "mask/scale", "mask2/x", "a b/c"};
  const ScopeTree tree(names);
  report::Report r;
  r.config.targets = {kTarget};
  for (const std::string& name : names) {
    report::NodeStats node;
    node.name = name;
    node.op_type = "Op";
    r.nodes.push_back(node);
  }
  const ReportModel model(std::move(r), "x.json");
  const auto rows = [&](const std::string& scope) {
    const std::string filter = scope_filter(tree, tree.find(scope));
    return filtered_sorted_rows(model, kTarget, NodeFilter::parse(filter), {});
  };
  EXPECT_EQ(scope_filter(tree, tree.find("/encoder/layer.0")), "^/?encoder/layer\\.0/");
  EXPECT_EQ(rows("/encoder/layer.0"), (std::vector<int>{0, 1}));  // not layer10: the dot is escaped
  EXPECT_EQ(rows("/encoder"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(rows("/mask"), (std::vector<int>{3}));               // names without the leading '/'
  EXPECT_EQ(rows("/a b"), (std::vector<int>{5}));                // a space cannot split the term
  EXPECT_EQ(scope_filter(tree, 0), "");
  // A split part lists its whole named scope.
  std::vector<std::string> many;
  for (int i = 0; i < 6; ++i) many.push_back("big/n" + std::to_string(i));
  const ScopeTree split(many, 4);
  EXPECT_EQ(scope_filter(split, split.scope(split.find("/big")).children[1].id), "^/?big/");
}

TEST(ScopeTreeTest, ChildrenInOrderOfTheirFirstNode) {
  const ScopeTree tree({"b/x", "a/y", "c", "b/z"});
  const std::vector<ScopeChild>& root = tree.scope(0).children;
  ASSERT_EQ(root.size(), 3u);
  EXPECT_TRUE(root[0].is_scope);
  EXPECT_EQ(tree.scope(root[0].id).name, "b");
  EXPECT_EQ(tree.scope(root[1].id).name, "a");
  EXPECT_FALSE(root[2].is_scope);
  EXPECT_EQ(root[2].id, 2);
  EXPECT_EQ(tree.scope(root[0].id).nodes, (std::vector<int>{0, 3}));
}

TEST(ScopeTreeTest, LargeGroupsSplitIntoParts) {
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) names.push_back("big/n" + std::to_string(i));
  names.push_back("big/inner/x");  // a sub-scope among the children moves into a part, one level deeper
  const ScopeTree tree(names, 4);
  const int big = tree.find("/big");
  ASSERT_GT(big, 0);
  const Scope& scope = tree.scope(big);
  ASSERT_EQ(scope.children.size(), 3u);  // 11 children in parts of 4, 4, 3
  std::vector<int> sizes;
  for (const ScopeChild& c : scope.children) {
    ASSERT_TRUE(c.is_scope);
    sizes.push_back(static_cast<int>(tree.scope(c.id).children.size()));
    EXPECT_EQ(tree.scope(c.id).depth, 2);
    EXPECT_EQ(tree.scope(c.id).parent, big);
  }
  EXPECT_EQ(sizes, (std::vector<int>{4, 4, 3}));
  EXPECT_EQ(tree.scope(scope.children[0].id).name, "part 1/3");
  EXPECT_EQ(tree.scope(scope.children[0].id).nodes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(tree.scope_of_node(5), scope.children[1].id);
  const int inner = tree.find("/big/inner");
  ASSERT_GT(inner, 0);
  EXPECT_EQ(tree.scope(inner).parent, scope.children[2].id);
  EXPECT_EQ(tree.scope(inner).depth, 3);
  EXPECT_EQ(tree.scope(scope.children[2].id).nodes, (std::vector<int>{8, 9, 10}));
  EXPECT_EQ(tree.scope(big).nodes.size(), 11u);
}

TEST(ScopeTreeTest, InitialExpansionOpensWholeLevelsWithinTheBudget) {
  std::vector<std::string> names;
  for (int layer = 0; layer < 10; ++layer)
    for (const char* op : {"A", "B", "C"}) names.push_back("/enc/layer." + std::to_string(layer) + "/" + op);
  const ScopeTree tree(names);
  const int enc = tree.find("/enc"), layer3 = tree.find("/enc/layer.3");
  // Root shows 1 item; opening enc shows 10 layers; opening every layer shows 30 nodes. enc alone would be
  // the only item, so it opens whatever the budget.
  EXPECT_TRUE(initial_expansion(tree, 5)[static_cast<size_t>(enc)]);
  EXPECT_FALSE(initial_expansion(tree, 5)[static_cast<size_t>(layer3)]);
  const std::vector<char> ten = initial_expansion(tree, 10);
  EXPECT_TRUE(ten[static_cast<size_t>(enc)]);
  EXPECT_FALSE(ten[static_cast<size_t>(layer3)]);
  EXPECT_TRUE(initial_expansion(tree, 29)[static_cast<size_t>(enc)]);
  EXPECT_FALSE(initial_expansion(tree, 29)[static_cast<size_t>(layer3)]);  // a level opens whole or not at all
  EXPECT_TRUE(initial_expansion(tree, 30)[static_cast<size_t>(layer3)]);
  EXPECT_TRUE(initial_expansion(tree, 0)[0]);  // the root is always open
  // Two top-level groups are not alone: they stay closed when opening them would pass the budget.
  const ScopeTree two({"/a/x", "/a/y", "/a/z", "/b/x", "/b/y"});
  EXPECT_FALSE(initial_expansion(two, 4)[static_cast<size_t>(two.find("/a"))]);
  EXPECT_TRUE(initial_expansion(two, 5)[static_cast<size_t>(two.find("/a"))]);
}

// [SECTION] Visible graph

TEST(VisibleGraphTest, CollapsedGroupsReplaceTheirNodesAndMergeEdges) {
  // 0 in, 1 g/a, 2 g/b, 3 out: a chain, plus in -> g/b.
  const ReportModel model = chain_model({"in", "g/a", "g/b", "out"}, {}, {{0, 2}});
  const ScopeTree tree({"in", "g/a", "g/b", "out"});
  const std::vector<std::pair<int, int>> edges = node_edges(model);
  EXPECT_EQ(edges, (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 2}, {2, 3}}));

  const VisibleGraph open = visible_graph(tree, full_expansion(tree), edges);
  ASSERT_EQ(open.items.size(), 4u);
  EXPECT_EQ(open.edges.size(), 4u);

  std::vector<char> collapsed(static_cast<size_t>(tree.scope_count()), 0);
  collapsed[0] = 1;
  const VisibleGraph closed = visible_graph(tree, collapsed, edges);
  ASSERT_EQ(closed.items.size(), 3u);  // in, g, out
  EXPECT_FALSE(closed.items[0].is_group);
  EXPECT_TRUE(closed.items[1].is_group);
  EXPECT_EQ(closed.items[1].id, tree.find("/g"));
  EXPECT_EQ(closed.items[1].first_node, 1);
  EXPECT_EQ(closed.item_of_node, (std::vector<int>{0, 1, 1, 2}));
  // in -> g twice becomes one edge; g/a -> g/b is inside the group and disappears.
  EXPECT_EQ(closed.edges, (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}}));
}

TEST(VisibleGraphTest, InterleavedGroupGivesABackEdgeThatTheLayoutFlags) {
  const ReportModel model = chain_model({"g/a", "x", "g/b"}, {});
  const ScopeTree tree({"g/a", "x", "g/b"});
  std::vector<char> collapsed(static_cast<size_t>(tree.scope_count()), 0);
  collapsed[0] = 1;
  const VisibleGraph graph = visible_graph(tree, collapsed, node_edges(model));
  ASSERT_EQ(graph.items.size(), 2u);  // g (first node 0), x
  EXPECT_EQ(graph.edges, (std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}));
  const std::optional<GraphLayout> layout = layered_layout({2, graph.edges});
  ASSERT_TRUE(layout);
  ASSERT_EQ(layout->routes.size(), 2u);
  EXPECT_FALSE(layout->routes[0].reversed);
  EXPECT_TRUE(layout->routes[1].reversed);
  EXPECT_LT(layout->layer[0], layout->layer[1]);
}

// [SECTION] Layered layout

// A random DAG: edges only from lower to higher indices, mostly short, some long (residual-like).
LayoutInput random_dag(int n, uint32_t seed) {
  LayoutInput input{n, {}};
  uint32_t state = seed;
  const auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  for (int v = 1; v < n; ++v) {
    input.edges.emplace_back(v - 1 - static_cast<int>(next() % std::min(v, 3)), v);
    if (next() % 4 == 0) input.edges.emplace_back(static_cast<int>(next() % static_cast<uint32_t>(v)), v);
  }
  std::sort(input.edges.begin(), input.edges.end());
  input.edges.erase(std::unique(input.edges.begin(), input.edges.end()), input.edges.end());
  return input;
}

TEST(LayeredLayoutTest, NoEdgeGoesUpAndNoItemsOverlap) {
  const LayoutInput input = random_dag(300, 7);
  const std::optional<GraphLayout> layout = layered_layout(input);
  ASSERT_TRUE(layout);
  ASSERT_EQ(layout->centre.size(), 300u);
  for (const auto& [from, to] : input.edges) {
    EXPECT_LT(layout->layer[static_cast<size_t>(from)], layout->layer[static_cast<size_t>(to)]) << from << "->" << to;
    EXPECT_LT(layout->centre[static_cast<size_t>(from)].y, layout->centre[static_cast<size_t>(to)].y);
  }
  for (const EdgeRoute& route : layout->routes) {
    EXPECT_FALSE(route.reversed);
    ASSERT_GE(route.points.size(), 2u);
    for (size_t i = 1; i < route.points.size(); ++i) EXPECT_LE(route.points[i - 1].y, route.points[i].y);
  }
  // Items in one layer keep the spacing.
  std::vector<std::vector<float>> xs(static_cast<size_t>(layout->layer_count));
  for (size_t i = 0; i < layout->centre.size(); ++i) xs[static_cast<size_t>(layout->layer[i])].push_back(layout->centre[i].x);
  for (std::vector<float>& layer : xs) {
    std::sort(layer.begin(), layer.end());
    for (size_t i = 1; i < layer.size(); ++i) EXPECT_GE(layer[i] - layer[i - 1], GraphLayout::kItemWidth + GraphLayout::kItemGap - 1e-3f);
  }
  EXPECT_GT(layout->dummy_count, 0);  // the long edges went through dummies
}

TEST(LayeredLayoutTest, DeterministicPositions) {
  const LayoutInput input = random_dag(500, 11);
  const std::optional<GraphLayout> a = layered_layout(input), b = layered_layout(input);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->centre.size(), b->centre.size());
  for (size_t i = 0; i < a->centre.size(); ++i) {
    EXPECT_EQ(a->centre[i].x, b->centre[i].x);
    EXPECT_EQ(a->centre[i].y, b->centre[i].y);
  }
  ASSERT_EQ(a->routes.size(), b->routes.size());
  for (size_t r = 0; r < a->routes.size(); ++r) ASSERT_EQ(a->routes[r].points.size(), b->routes[r].points.size());
}

TEST(LayeredLayoutTest, ChainIsAStraightColumnAndSourcesSitAboveTheirConsumer) {
  // 1 -> 2 -> 3 -> 4 -> 5, and 0 (a constant, say) read by 5 only: it sits just above 5, not at the top.
  const std::optional<GraphLayout> layout = layered_layout({6, {{1, 2}, {2, 3}, {3, 4}, {4, 5}, {0, 5}}});
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->layer, (std::vector<int>{3, 0, 1, 2, 3, 4}));
  EXPECT_EQ(layout->centre[1].x, layout->centre[3].x);
  EXPECT_EQ(layout->dummy_count, 0);
}

TEST(LayeredLayoutTest, BarycentreOrderingRemovesCrossings) {
  // In execution order 0 feeds 3 and 1 feeds 2: the two edges cross until 2 and 3 swap.
  const std::optional<GraphLayout> layout = layered_layout({4, {{0, 3}, {1, 2}}});
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->initial_crossings, 1);
  EXPECT_EQ(layout->crossings, 0);
  EXPECT_LT(layout->centre[3].x, layout->centre[2].x);
  // A larger graph: never worse than execution order.
  const std::optional<GraphLayout> random = layered_layout(random_dag(400, 5));
  ASSERT_TRUE(random);
  EXPECT_LE(random->crossings, random->initial_crossings);
}

TEST(LayeredLayoutTest, LongEdgesRouteThroughDummiesAndCancelStops) {
  const std::optional<GraphLayout> layout = layered_layout({4, {{0, 1}, {1, 2}, {2, 3}, {0, 3}}});
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->dummy_count, 2);
  const EdgeRoute& skip = layout->routes[3];
  EXPECT_EQ(skip.points.size(), 6u);  // source bottom, two dummies (top and bottom each), target top
  LayoutProgress progress;
  progress.cancel = true;
  EXPECT_FALSE(layered_layout(random_dag(100, 3), &progress));
  LayoutProgress finished;
  ASSERT_TRUE(layered_layout(random_dag(100, 3), &finished));
  EXPECT_EQ(finished.fraction.load(), 1.0f);
}

// [SECTION] Metric overlay and export

TEST(ScopeOverlayTest, CollapsedGroupsShowTheirWorstVerdict) {
  using V = report::Verdict;
  const std::vector<std::string> names{"/enc/a", "/enc/b", "/enc/c", "/dec/a", "/dec/b"};
  const ReportModel model = chain_model(names, {V::Safe, V::Unsafe, V::Warn, V::Safe, V::Warn});
  const ScopeTree tree(names);
  const ScopeOverlay overlay = scope_overlay(tree, model, kTarget, GraphMetric::Verdict);
  const size_t enc = static_cast<size_t>(tree.find("/enc")), dec = static_cast<size_t>(tree.find("/dec"));
  EXPECT_EQ(overlay.scope_worst_verdict[enc], V::Unsafe);
  EXPECT_EQ(overlay.scope_worst_verdict[dec], V::Warn);
  EXPECT_EQ(overlay.scope_verdicts[enc].unsafe, 1);
  EXPECT_EQ(overlay.scope_verdicts[enc].warn, 1);
  EXPECT_EQ(overlay.scope_verdicts[enc].safe, 1);
  EXPECT_EQ(overlay.bins[static_cast<size_t>(overlay.scope_bin[enc])].tone, BinTone::Unsafe);
  EXPECT_EQ(overlay.bins[static_cast<size_t>(overlay.scope_bin[dec])].tone, BinTone::Warn);
  EXPECT_EQ(overlay.bin_counts,
            (std::vector<int>{1, 2, 2, 0}));  // unsafe, warn, safe, pending (a finished report: none)
  EXPECT_EQ(worst_nodes(tree.scope(static_cast<int>(enc)), overlay, 2), (std::vector<int>{1, 2}));  // unsafe, then warn
  EXPECT_EQ(worst_nodes(tree.scope(0), overlay, 10), (std::vector<int>{1, 2, 4, 0, 3}));       // all five, worst first
  // Nothing measured in these nodes: every SQNR falls in the last bin.
  const ScopeOverlay sqnr = scope_overlay(tree, model, kTarget, GraphMetric::IsolatedSqnr);
  EXPECT_EQ(sqnr.bins.back().tone, BinTone::NotMeasured);
  EXPECT_EQ(sqnr.bin_counts.back(), 5);
}

TEST(MetricBinTest, SqnrBinsFollowTheReportsThresholds) {
  const report::Thresholds thresholds;  // fp16: warn below 40 dB, unsafe below 20 dB
  NodeFigures f;
  f.measured_outputs = 1;
  const auto bin = [&](double db) {
    f.isolated_sqnr_db = db;
    return metric_bin(GraphMetric::IsolatedSqnr, f, thresholds, kTarget);
  };
  EXPECT_EQ(bin(10), 0);
  EXPECT_EQ(bin(30), 1);
  EXPECT_EQ(bin(60), 2);
  EXPECT_EQ(bin(probes::Divergence::kMaxSqnrDb), 3);
  EXPECT_EQ(bin(NAN), 4);
  f.isolated_nonfinite = 3;
  EXPECT_EQ(bin(NAN), 0);  // NaN/Inf where the reference is finite: the worst bin
  EXPECT_EQ(metric_bins(GraphMetric::IsolatedSqnr, thresholds, kTarget)[0].label, "< 20 dB or NaN/Inf");
  f.headroom_bits = -2;
  EXPECT_EQ(metric_bin(GraphMetric::Headroom, f, thresholds, kTarget), 0);
  f.headroom_bits = 9;
  EXPECT_EQ(metric_bin(GraphMetric::Headroom, f, thresholds, kTarget), 2);
}

TEST(ModelExplorerExportTest, NodeDataShape) {
  using V = report::Verdict;
  const ReportModel model = chain_model({"a", "b", "c"}, {V::Safe, V::Unsafe, V::Warn});
  const report::json data = model_explorer_node_data(model, kTarget, GraphMetric::Verdict, "main_graph");
  ASSERT_TRUE(data.contains("main_graph"));
  const report::json& results = data["main_graph"]["results"];
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results["b"]["value"].get<double>(), 2);
  EXPECT_EQ(results["b"]["bgColor"], "#eb423d");  // verdict_color(Unsafe)
  EXPECT_EQ(results["c"]["value"].get<double>(), 1);
  EXPECT_EQ(results["a"]["bgColor"], "#59cc66");
  const report::json& thresholds = data["main_graph"]["thresholds"];
  ASSERT_EQ(thresholds.size(), 3u);
  EXPECT_EQ(thresholds[2]["value"].get<double>(), 2);
  EXPECT_EQ(thresholds[2]["bgColor"], "#eb423d");
  // Not measured: no SQNR to give, so no result.
  EXPECT_TRUE(model_explorer_node_data(model, kTarget, GraphMetric::IsolatedSqnr, "g")["g"]["results"].empty());
}

// [SECTION] Views and saved state

// A click in one panel moves the others: panels drawn before the click learn of it in the next frame, so a
// change stays visible for two frames, then settles.
TEST(DashboardSelectionTest, AChangeIsSeenByEveryPanelThenSettles) {
  DashboardSelection selection;
  selection.begin_frame();
  EXPECT_FALSE(selection.node_changed_recently());
  selection.select_node(4);
  EXPECT_EQ(selection.node, 4);
  EXPECT_TRUE(selection.node_changed_recently());  // panels drawn after the click, this frame
  selection.begin_frame();
  EXPECT_TRUE(selection.node_changed_recently());  // panels drawn before it, next frame
  selection.begin_frame();
  EXPECT_FALSE(selection.node_changed_recently());
  selection.select_node(4);  // the same node again is no change
  EXPECT_FALSE(selection.node_changed_recently());
  selection.table_filter_request = "^/?encoder/";
  EXPECT_EQ(selection.node, 4);  // a request for the table leaves the selection alone
}

TEST(DashboardViewTest, NamesRoundTrip) {
  for (DashboardView view : kDashboardViews) EXPECT_EQ(parse_view(view_name(view)), view);
  EXPECT_FALSE(parse_view("tables"));
}

TEST(SettingsFileTest, UserConfigFolderNotTheWorkingDirectory) {
  EXPECT_EQ(settings_file("/x/config", "/home/u"), std::filesystem::path("/x/config/mpaudit/imgui.ini"));
  EXPECT_EQ(settings_file(nullptr, "/home/u"), std::filesystem::path("/home/u/.config/mpaudit/imgui.ini"));
  EXPECT_EQ(settings_file("", "/home/u"), std::filesystem::path("/home/u/.config/mpaudit/imgui.ini"));
  EXPECT_EQ(settings_file("relative/dir", "/home/u"), std::filesystem::path("/home/u/.config/mpaudit/imgui.ini"));
  EXPECT_FALSE(settings_file(nullptr, nullptr));
  EXPECT_FALSE(settings_file("", ""));
}

}  // namespace
}  // namespace mpa::ui
