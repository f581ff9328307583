#include "ui/graph_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <string_view>

namespace mpa::ui {

// [SECTION] Name scopes

std::vector<std::string> scope_segments(const std::string& node_name) {
  std::vector<std::string> segments;
  size_t start = 0;
  while (start <= node_name.size()) {
    const size_t slash = node_name.find('/', start);
    const size_t end = slash == std::string::npos ? node_name.size() : slash;
    if (end > start) segments.push_back(node_name.substr(start, end - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (!segments.empty()) segments.pop_back();  // the node's own name
  // "a/" names a node "a" with an empty tail: its last segment is its name, not a scope.
  if (!node_name.empty() && node_name.back() == '/' && !segments.empty()) segments.pop_back();
  return segments;
}

ScopeTree::ScopeTree(const std::vector<std::string>& node_names, int max_children) {
  scopes_.push_back(Scope{});
  std::map<std::string, int> by_path{{"", 0}};
  scope_of_node_.resize(node_names.size());
  for (int node = 0; node < static_cast<int>(node_names.size()); ++node) {
    int current = 0;
    std::string path;
    for (const std::string& segment : scope_segments(node_names[static_cast<size_t>(node)])) {
      path += "/" + segment;
      const auto [it, inserted] = by_path.emplace(path, static_cast<int>(scopes_.size()));
      if (inserted) {
        Scope scope;
        scope.name = segment;
        scope.path = path;
        scope.parent = current;
        scope.depth = scopes_[static_cast<size_t>(current)].depth + 1;
        scopes_.push_back(std::move(scope));
        scopes_[static_cast<size_t>(current)].children.push_back({true, it->second});
      }
      current = it->second;
    }
    scope_of_node_[static_cast<size_t>(node)] = current;
    scopes_[static_cast<size_t>(current)].children.push_back({false, node});
    for (int s = current; s >= 0; s = scopes_[static_cast<size_t>(s)].parent) scopes_[static_cast<size_t>(s)].nodes.push_back(node);
  }
  split_large(0, std::max(max_children, 2));
}

void ScopeTree::split_large(int id, int max_children) {
  // Children first: a part made below keeps its own children within the limit.
  const std::vector<ScopeChild> children = scopes_[static_cast<size_t>(id)].children;
  for (const ScopeChild& child : children)
    if (child.is_scope) split_large(child.id, max_children);
  while (scopes_[static_cast<size_t>(id)].children.size() > static_cast<size_t>(max_children)) {
    const std::vector<ScopeChild> old = std::move(scopes_[static_cast<size_t>(id)].children);
    scopes_[static_cast<size_t>(id)].children.clear();
    const size_t parts = (old.size() + static_cast<size_t>(max_children) - 1) / static_cast<size_t>(max_children);
    for (size_t p = 0; p < parts; ++p) {
      const int part_id = static_cast<int>(scopes_.size());
      Scope part;
      part.name = "part " + std::to_string(p + 1) + "/" + std::to_string(parts);
      part.is_part = true;
      part.path = scopes_[static_cast<size_t>(id)].path + "/[" + part.name + "]";
      part.parent = id;
      part.depth = scopes_[static_cast<size_t>(id)].depth + 1;
      const size_t begin = p * static_cast<size_t>(max_children), end = std::min(old.size(), begin + static_cast<size_t>(max_children));
      part.children.assign(old.begin() + static_cast<std::ptrdiff_t>(begin), old.begin() + static_cast<std::ptrdiff_t>(end));
      scopes_.push_back(std::move(part));
      std::vector<int> nodes;
      for (const ScopeChild& child : scopes_[static_cast<size_t>(part_id)].children) {
        if (!child.is_scope) {
          nodes.push_back(child.id);
          scope_of_node_[static_cast<size_t>(child.id)] = part_id;
          continue;
        }
        scopes_[static_cast<size_t>(child.id)].parent = part_id;
        const std::vector<int>& below = scopes_[static_cast<size_t>(child.id)].nodes;
        nodes.insert(nodes.end(), below.begin(), below.end());
        // The subtree moved one level down.
        std::vector<int> stack{child.id};
        while (!stack.empty()) {
          const int s = stack.back();
          stack.pop_back();
          ++scopes_[static_cast<size_t>(s)].depth;
          for (const ScopeChild& c : scopes_[static_cast<size_t>(s)].children)
            if (c.is_scope) stack.push_back(c.id);
        }
      }
      std::sort(nodes.begin(), nodes.end());
      scopes_[static_cast<size_t>(part_id)].nodes = std::move(nodes);
      scopes_[static_cast<size_t>(id)].children.push_back({true, part_id});
    }
  }
}

int ScopeTree::find(const std::string& path) const {
  for (int id = 0; id < scope_count(); ++id)
    if (scopes_[static_cast<size_t>(id)].path == path) return id;
  return -1;
}

bool ScopeTree::is_within(int scope, int ancestor) const {
  for (int s = scope; s >= 0; s = scopes_[static_cast<size_t>(s)].parent)
    if (s == ancestor) return true;
  return false;
}

std::string scope_filter(const ScopeTree& tree, int scope) {
  while (scope > 0 && tree.scope(scope).is_part) scope = tree.scope(scope).parent;
  if (scope <= 0) return "";
  std::string escaped = "^/?";
  for (char c : tree.scope(scope).path.substr(1)) {
    if (std::string_view(R"(\^$.|?*+()[]{})").find(c) != std::string_view::npos) escaped += '\\';
    if (c == ' ') escaped += "\\s";  // the filter splits terms on spaces
    else escaped += c;
  }
  return escaped + "/";
}

std::vector<char> initial_expansion(const ScopeTree& tree, int budget) {
  std::vector<char> expanded(static_cast<size_t>(tree.scope_count()), 0);
  expanded[0] = 1;
  int visible = static_cast<int>(tree.scope(0).children.size());
  // Level by level: a level opens only as a whole, so siblings look alike.
  std::vector<int> level;
  for (const ScopeChild& c : tree.scope(0).children)
    if (c.is_scope) level.push_back(c.id);
  while (!level.empty()) {
    int added = 0;
    for (int s : level) added += static_cast<int>(tree.scope(s).children.size()) - 1;
    // A lone group says nothing (e.g. /encoder holding the whole model): it opens whatever the budget, and
    // its parts keep what shows within ScopeTree's max_children.
    const bool lone = level.size() == 1 && visible == 1;
    if (visible + added > budget && !lone) break;
    visible += added;
    std::vector<int> next;
    for (int s : level) {
      expanded[static_cast<size_t>(s)] = 1;
      for (const ScopeChild& c : tree.scope(s).children)
        if (c.is_scope) next.push_back(c.id);
    }
    level = std::move(next);
  }
  return expanded;
}

std::vector<char> full_expansion(const ScopeTree& tree) { return std::vector<char>(static_cast<size_t>(tree.scope_count()), 1); }

// [SECTION] Visible graph

std::vector<std::pair<int, int>> node_edges(const ReportModel& model) {
  std::vector<std::pair<int, int>> edges;
  for (int node = 0; node < model.node_count(); ++node)
    for (const std::string& input : model.node(node).inputs) {
      if (input.empty()) continue;
      const int producer = model.producer_of(input);
      if (producer >= 0 && producer != node) edges.emplace_back(producer, node);
    }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

VisibleGraph visible_graph(const ScopeTree& tree, const std::vector<char>& expanded,
                           const std::vector<std::pair<int, int>>& node_edges) {
  VisibleGraph graph;
  const size_t node_count = tree.scope(0).nodes.size();
  std::vector<int> stack{0};
  while (!stack.empty()) {
    const Scope& scope = tree.scope(stack.back());
    stack.pop_back();
    for (const ScopeChild& child : scope.children) {
      if (!child.is_scope) graph.items.push_back({false, child.id, child.id});
      else if (static_cast<size_t>(child.id) < expanded.size() && expanded[static_cast<size_t>(child.id)]) stack.push_back(child.id);
      else graph.items.push_back({true, child.id, tree.scope(child.id).nodes.front()});
    }
  }
  std::sort(graph.items.begin(), graph.items.end(), [](const GraphItem& a, const GraphItem& b) { return a.first_node < b.first_node; });
  graph.item_of_node.assign(node_count, -1);
  for (int i = 0; i < static_cast<int>(graph.items.size()); ++i) {
    const GraphItem& item = graph.items[static_cast<size_t>(i)];
    if (!item.is_group) graph.item_of_node[static_cast<size_t>(item.id)] = i;
    else
      for (int node : tree.scope(item.id).nodes) graph.item_of_node[static_cast<size_t>(node)] = i;
  }
  for (const auto& [producer, consumer] : node_edges) {
    const int from = graph.item_of_node[static_cast<size_t>(producer)], to = graph.item_of_node[static_cast<size_t>(consumer)];
    if (from != to) graph.edges.emplace_back(from, to);
  }
  std::sort(graph.edges.begin(), graph.edges.end());
  graph.edges.erase(std::unique(graph.edges.begin(), graph.edges.end()), graph.edges.end());
  return graph;
}

// [SECTION] Layered layout

namespace {

// Above this many dummy vertices, longer edges are drawn straight (and take no part in ordering), so a
// pathological graph cannot make the layout quadratic.
constexpr int kMaxDummies = 250000;
constexpr int kOrderingSweeps = 4;  // each a downward and an upward pass

// Places one layer's vertices, in their order, as close to `desired` as the minimum spacing allows (least
// squares): isotonic regression by pooling adjacent violators on x minus each vertex's spacing offset.
void place_layer(const std::vector<int>& layer, const std::vector<float>& width, const std::vector<double>& desired,
                 std::vector<float>& x) {
  const size_t n = layer.size();
  if (n == 0) return;
  std::vector<double> offset(n, 0);
  for (size_t i = 1; i < n; ++i)
    offset[i] = offset[i - 1] + (width[static_cast<size_t>(layer[i - 1])] + width[static_cast<size_t>(layer[i])]) / 2 +
                GraphLayout::kItemGap;
  struct Block {
    double sum;
    int count;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < n; ++i) {
    blocks.push_back({desired[i] - offset[i], 1});
    while (blocks.size() >= 2) {
      const Block& last = blocks.back();
      Block& before = blocks[blocks.size() - 2];
      if (before.sum / before.count <= last.sum / last.count) break;
      before.sum += last.sum;
      before.count += last.count;
      blocks.pop_back();
    }
  }
  size_t i = 0;
  for (const Block& block : blocks)
    for (int k = 0; k < block.count; ++k, ++i) x[static_cast<size_t>(layer[i])] = static_cast<float>(block.sum / block.count + offset[i]);
}

// Edge crossings between adjacent layers (edges spanning one layer, as ordering sees them): for each layer,
// its edges sorted by their upper end, then the inversions among their lower ends, counted with a Fenwick
// tree (Barth, Juenger, Mutzel).
int64_t count_crossings(const std::vector<std::vector<int>>& layers, const std::vector<std::vector<int>>& down,
                        const std::vector<double>& position) {
  int64_t total = 0;
  std::vector<std::pair<int, int>> ends;
  std::vector<int64_t> tree;
  for (size_t l = 0; l + 1 < layers.size(); ++l) {
    ends.clear();
    for (int u : layers[l])
      for (int v : down[static_cast<size_t>(u)])
        ends.emplace_back(static_cast<int>(position[static_cast<size_t>(u)]), static_cast<int>(position[static_cast<size_t>(v)]));
    std::sort(ends.begin(), ends.end());
    const size_t size = layers[l + 1].size();
    tree.assign(size + 1, 0);
    int64_t seen = 0;
    for (const auto& [upper, lower] : ends) {
      // Edges seen so far whose lower end lies right of this one cross it.
      int64_t at_or_left = 0;
      for (size_t i = static_cast<size_t>(lower) + 1; i > 0; i -= i & (~i + 1)) at_or_left += tree[i];
      total += seen - at_or_left;
      for (size_t i = static_cast<size_t>(lower) + 1; i <= size; i += i & (~i + 1)) ++tree[i];
      ++seen;
    }
  }
  return total;
}

// layered_layout's steps over their shared state, in order: each reads what the ones before it made.
struct LayeredLayout {
  LayeredLayout(const LayoutInput& in, LayoutProgress* watch) : input(in), progress(watch), n(in.item_count) {}
  const LayoutInput& input;
  LayoutProgress* progress;
  int n;
  GraphLayout out;
  std::vector<std::pair<int, int>> links;          // unique edges, oriented along item order
  std::vector<std::vector<int>> preds, succs;      // per item, over links
  std::vector<int> layer;                          // per item
  std::vector<int> vertex_layer, order_key;        // per vertex: items, then dummies
  std::vector<std::vector<int>> up, down, chains;  // neighbours in adjacent layers; per link, its vertices
  size_t vertex_count = 0;
  std::vector<std::vector<int>> layers;            // vertices per layer, in order
  std::vector<double> position;                    // per vertex, its index in its layer
  std::vector<float> width, x;                     // per vertex

  bool cancelled() const { return progress && progress->cancel.load(std::memory_order_relaxed); }
  void report(float fraction) const {
    if (progress) progress->fraction.store(fraction, std::memory_order_relaxed);
  }

  std::optional<GraphLayout> run() {
    orient_links();
    assign_layers();
    report(0.1f);
    if (cancelled()) return std::nullopt;
    add_dummies();
    if (!order_layers() || !place_horizontally()) return std::nullopt;
    route_edges();
    report(1.0f);
    return std::move(out);
  }

  void orient_links() {
    // 1. Orient every edge along item order; links are the unique oriented pairs.
    links.reserve(input.edges.size());
    for (const auto& [a, b] : input.edges) links.emplace_back(std::min(a, b), std::max(a, b));
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
    preds.resize(static_cast<size_t>(n));
    succs.resize(static_cast<size_t>(n));
    for (const auto& [u, v] : links) {
      preds[static_cast<size_t>(v)].push_back(u);
      succs[static_cast<size_t>(u)].push_back(v);
    }
  }

  void assign_layers() {
    // 2. Longest-path layers (item order is a topological order), then each source moves down to just above
    // its first consumer, so constants and weights sit next to where they are used.
    layer.assign(static_cast<size_t>(n), 0);
    for (int v = 0; v < n; ++v)
      for (int u : preds[static_cast<size_t>(v)]) layer[static_cast<size_t>(v)] = std::max(layer[static_cast<size_t>(v)], layer[static_cast<size_t>(u)] + 1);
    for (int v = n - 1; v >= 0; --v) {
      if (!preds[static_cast<size_t>(v)].empty() || succs[static_cast<size_t>(v)].empty()) continue;
      int first = INT32_MAX;
      for (int s : succs[static_cast<size_t>(v)]) first = std::min(first, layer[static_cast<size_t>(s)]);
      layer[static_cast<size_t>(v)] = first - 1;
    }
    for (int l : layer) out.layer_count = std::max(out.layer_count, l + 1);
  }

  void add_dummies() {
    // 3. Vertices: the items, then dummies on links spanning more than one layer. up/down hold neighbours in
    // the adjacent layers only.
    vertex_layer.assign(layer.begin(), layer.end());
    order_key.resize(static_cast<size_t>(n));
    std::iota(order_key.begin(), order_key.end(), 0);
    up.resize(static_cast<size_t>(n));
    down.resize(static_cast<size_t>(n));
    chains.resize(links.size());
    for (size_t k = 0; k < links.size(); ++k) {
      const auto [u, v] = links[k];
      const int span = layer[static_cast<size_t>(v)] - layer[static_cast<size_t>(u)];
      std::vector<int>& chain = chains[k];
      chain.push_back(u);
      if (span > 1 && out.dummy_count + span - 1 <= kMaxDummies) {
        for (int l = layer[static_cast<size_t>(u)] + 1; l < layer[static_cast<size_t>(v)]; ++l) {
          chain.push_back(static_cast<int>(vertex_layer.size()));
          vertex_layer.push_back(l);
          order_key.push_back(u);
          up.emplace_back();
          down.emplace_back();
          ++out.dummy_count;
        }
      }
      chain.push_back(v);
      for (size_t i = 0; i + 1 < chain.size(); ++i) {
        const int a = chain[i], b = chain[i + 1];
        if (vertex_layer[static_cast<size_t>(b)] - vertex_layer[static_cast<size_t>(a)] != 1) continue;  // straight long edge
        down[static_cast<size_t>(a)].push_back(b);
        up[static_cast<size_t>(b)].push_back(a);
      }
    }
    vertex_count = vertex_layer.size();
  }

  bool order_layers() {
    // 4. Ordering: start from execution order (dummies after the items, near their source), then barycentre
    // sweeps; a vertex with no neighbour on the side looked at keeps its place. The order with the fewest
    // crossings seen after any sweep is kept (a sweep can make things worse).
    layers.resize(static_cast<size_t>(out.layer_count));
    {
      std::vector<int> by_key(vertex_count);
      std::iota(by_key.begin(), by_key.end(), 0);
      std::stable_sort(by_key.begin(), by_key.end(), [&](int a, int b) {
        const bool dummy_a = a >= n, dummy_b = b >= n;
        if (order_key[static_cast<size_t>(a)] != order_key[static_cast<size_t>(b)])
          return order_key[static_cast<size_t>(a)] < order_key[static_cast<size_t>(b)];
        return dummy_a < dummy_b;
      });
      for (int v : by_key) layers[static_cast<size_t>(vertex_layer[static_cast<size_t>(v)])].push_back(v);
    }
    position.assign(vertex_count, 0);
    for (const std::vector<int>& l : layers)
      for (size_t i = 0; i < l.size(); ++i) position[static_cast<size_t>(l[i])] = static_cast<double>(i);
    std::vector<double> barycentre(vertex_count, 0);
    const auto crossings = [&] { return count_crossings(layers, down, position); };
    int64_t fewest = crossings();
    std::vector<std::vector<int>> best = layers;
    out.initial_crossings = fewest;
    for (int pass = 0; pass < 2 * kOrderingSweeps && fewest > 0; ++pass) {
      const bool downward = pass % 2 == 0;
      const int layer_count = out.layer_count;
      for (int step = 1; step < layer_count; ++step) {
        std::vector<int>& l = layers[static_cast<size_t>(downward ? step : layer_count - 1 - step)];
        for (int v : l) {
          const std::vector<int>& neighbours = downward ? up[static_cast<size_t>(v)] : down[static_cast<size_t>(v)];
          double sum = 0;
          for (int w : neighbours) sum += position[static_cast<size_t>(w)];
          barycentre[static_cast<size_t>(v)] = neighbours.empty() ? position[static_cast<size_t>(v)] : sum / static_cast<double>(neighbours.size());
        }
        std::stable_sort(l.begin(), l.end(), [&](int a, int b) { return barycentre[static_cast<size_t>(a)] < barycentre[static_cast<size_t>(b)]; });
        for (size_t i = 0; i < l.size(); ++i) position[static_cast<size_t>(l[i])] = static_cast<double>(i);
        if (step % 64 == 0 && cancelled()) return false;
      }
      report(0.1f + 0.7f * static_cast<float>(pass + 1) / (2 * kOrderingSweeps));
      if (cancelled()) return false;
      if (const int64_t now = crossings(); now < fewest) {
        fewest = now;
        best = layers;
      }
    }
    layers = std::move(best);
    for (const std::vector<int>& l : layers)
      for (size_t i = 0; i < l.size(); ++i) position[static_cast<size_t>(l[i])] = static_cast<double>(i);
    out.crossings = fewest;
    return true;
  }

  bool place_horizontally() {
    // 5. x: packed at first, then pulled towards the neighbours above, below and above again, keeping order
    // and spacing.
    width.assign(vertex_count, GraphLayout::kDummyWidth);
    x.assign(vertex_count, 0);
    for (int v = 0; v < n; ++v) width[static_cast<size_t>(v)] = GraphLayout::kItemWidth;
    for (const std::vector<int>& l : layers) place_layer(l, width, std::vector<double>(l.size(), 0), x);
    std::vector<double> desired;
    for (int pass = 0; pass < 3; ++pass) {
      const bool downward = pass % 2 == 0;
      for (int step = 1; step < out.layer_count; ++step) {
        const std::vector<int>& l = layers[static_cast<size_t>(downward ? step : out.layer_count - 1 - step)];
        desired.assign(l.size(), 0);
        for (size_t i = 0; i < l.size(); ++i) {
          const std::vector<int>& neighbours = downward ? up[static_cast<size_t>(l[i])] : down[static_cast<size_t>(l[i])];
          double sum = 0;
          for (int w : neighbours) sum += x[static_cast<size_t>(w)];
          desired[i] = neighbours.empty() ? x[static_cast<size_t>(l[i])] : sum / static_cast<double>(neighbours.size());
        }
        place_layer(l, width, desired, x);
      }
      report(0.8f + 0.15f * static_cast<float>(pass + 1) / 3);
      if (cancelled()) return false;
    }
    return true;
  }

  void route_edges() {
    // 6. Coordinates and routes.
    const float layer_step = GraphLayout::kItemHeight + GraphLayout::kLayerGap;
    const auto y_of = [&](int v) { return static_cast<float>(vertex_layer[static_cast<size_t>(v)]) * layer_step; };
    out.layer = layer;
    out.centre.resize(static_cast<size_t>(n));
    out.min = {0, 0};
    out.max = {0, 0};
    bool first = true;
    const auto extend = [&](Point p) {
      if (first) {
        out.min = out.max = p;
        first = false;
      }
      out.min = {std::min(out.min.x, p.x), std::min(out.min.y, p.y)};
      out.max = {std::max(out.max.x, p.x), std::max(out.max.y, p.y)};
    };
    for (int v = 0; v < n; ++v) {
      out.centre[static_cast<size_t>(v)] = {x[static_cast<size_t>(v)], y_of(v)};
      extend({x[static_cast<size_t>(v)] - GraphLayout::kItemWidth / 2, y_of(v) - GraphLayout::kItemHeight / 2});
      extend({x[static_cast<size_t>(v)] + GraphLayout::kItemWidth / 2, y_of(v) + GraphLayout::kItemHeight / 2});
    }
    out.routes.reserve(input.edges.size());
    for (const auto& [a, b] : input.edges) {
      const auto link = std::lower_bound(links.begin(), links.end(), std::make_pair(std::min(a, b), std::max(a, b)));
      const std::vector<int>& chain = chains[static_cast<size_t>(link - links.begin())];
      EdgeRoute route{a, b, a > b, {}, {}, {}};
      const float half = GraphLayout::kItemHeight / 2;
      route.points.push_back({x[static_cast<size_t>(chain.front())], y_of(chain.front()) + half});
      for (size_t i = 1; i + 1 < chain.size(); ++i) {
        route.points.push_back({x[static_cast<size_t>(chain[i])], y_of(chain[i]) - half});
        route.points.push_back({x[static_cast<size_t>(chain[i])], y_of(chain[i]) + half});
      }
      route.points.push_back({x[static_cast<size_t>(chain.back())], y_of(chain.back()) - half});
      if (route.reversed) std::reverse(route.points.begin(), route.points.end());
      route.min = route.max = route.points.front();
      for (const Point& p : route.points) {
        route.min = {std::min(route.min.x, p.x), std::min(route.min.y, p.y)};
        route.max = {std::max(route.max.x, p.x), std::max(route.max.y, p.y)};
        extend(p);
      }
      out.routes.push_back(std::move(route));
    }
  }
};

}  // namespace

std::optional<GraphLayout> layered_layout(const LayoutInput& input, LayoutProgress* progress) {
  return LayeredLayout(input, progress).run();
}

// [SECTION] Metric overlay

const char* metric_name(GraphMetric metric) {
  switch (metric) {
    case GraphMetric::Verdict: return "verdict";
    case GraphMetric::IsolatedSqnr: return "isolated SQNR";
    case GraphMetric::PropagatedSqnr: return "propagated SQNR";
    case GraphMetric::Headroom: return "headroom bits";
    case GraphMetric::Overflow: return "overflow count";
    case GraphMetric::Flushed: return "flushed to zero %";
  }
  return "?";
}

namespace {

double threshold_for(const std::map<std::string, double>& by_format, const std::string& target) {
  const auto it = by_format.find(target);
  return it == by_format.end() ? NAN : it->second;
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

constexpr double kTightHeadroomBits = 4;  // less than 16x between the largest value and the format's max

}  // namespace

std::vector<MetricBin> metric_bins(GraphMetric metric, const report::Thresholds& thresholds, const std::string& target) {
  switch (metric) {
    case GraphMetric::Verdict:
      return {{"unsafe", BinTone::Unsafe},
              {"warn", BinTone::Warn},
              {"safe", BinTone::Safe},
              {"pending or not run", BinTone::NotMeasured}};
    case GraphMetric::IsolatedSqnr:
    case GraphMetric::PropagatedSqnr: {
      const std::string unsafe = number_text(threshold_for(thresholds.sqnr_unsafe_db, target));
      const std::string warn = number_text(threshold_for(thresholds.sqnr_warn_db, target));
      return {{"< " + unsafe + " dB or NaN/Inf", BinTone::Unsafe},
              {unsafe + " .. " + warn + " dB", BinTone::Warn},
              {">= " + warn + " dB", BinTone::Safe},
              {"exact", BinTone::Good},
              {"not measured", BinTone::NotMeasured}};
    }
    case GraphMetric::Headroom:
      return {{"< 0 bits (overflow)", BinTone::Unsafe},
              {"0 .. " + number_text(kTightHeadroomBits) + " bits", BinTone::Warn},
              {">= " + number_text(kTightHeadroomBits) + " bits", BinTone::Safe},
              {"not measured", BinTone::NotMeasured}};
    case GraphMetric::Overflow:
      return {{"> 0 values", BinTone::Unsafe}, {"none", BinTone::Safe}, {"not measured", BinTone::NotMeasured}};
    case GraphMetric::Flushed: {
      const std::string unsafe = number_text(100 * thresholds.underflow_unsafe_frac);
      const std::string warn = number_text(100 * thresholds.underflow_warn_frac);
      return {{">= " + unsafe + " %", BinTone::Unsafe},
              {warn + " .. " + unsafe + " %", BinTone::Warn},
              {"> 0, < " + warn + " %", BinTone::Safe},
              {"none", BinTone::Good},
              {"not measured", BinTone::NotMeasured}};
    }
  }
  return {};
}

int metric_bin(GraphMetric metric, const NodeFigures& f, const report::Thresholds& thresholds, const std::string& target) {
  switch (metric) {
    case GraphMetric::Verdict:
      if (f.unmeasured()) return 3;
      return f.verdict == report::Verdict::Unsafe ? 0 : f.verdict == report::Verdict::Warn ? 1 : 2;
    case GraphMetric::IsolatedSqnr:
    case GraphMetric::PropagatedSqnr: {
      const bool isolated = metric == GraphMetric::IsolatedSqnr;
      const double sqnr = isolated ? f.isolated_sqnr_db : f.propagated_sqnr_db;
      const int64_t nonfinite = isolated ? f.isolated_nonfinite : f.propagated_nonfinite;
      if (std::isnan(sqnr)) return nonfinite > 0 ? 0 : 4;
      if (sqnr >= probes::Divergence::kMaxSqnrDb) return 3;
      if (sqnr < threshold_for(thresholds.sqnr_unsafe_db, target)) return 0;
      if (sqnr < threshold_for(thresholds.sqnr_warn_db, target)) return 1;
      return 2;
    }
    case GraphMetric::Headroom:
      if (std::isnan(f.headroom_bits)) return 3;
      return f.headroom_bits < 0 ? 0 : f.headroom_bits < kTightHeadroomBits ? 1 : 2;
    case GraphMetric::Overflow:
      if (f.measured_outputs == 0) return 2;
      return f.overflow > 0 ? 0 : 1;
    case GraphMetric::Flushed:
      if (f.measured_outputs == 0) return 4;
      if (f.flush_to_zero_percent >= 100 * thresholds.underflow_unsafe_frac) return 0;
      if (f.flush_to_zero_percent >= 100 * thresholds.underflow_warn_frac) return 1;
      return f.flush_to_zero_percent > 0 ? 2 : 3;
  }
  return 0;
}

ScopeOverlay scope_overlay(const ScopeTree& tree, const ReportModel& model, const std::string& target, GraphMetric metric) {
  ScopeOverlay overlay;
  const report::Thresholds& thresholds = model.report().config.thresholds;
  overlay.bins = metric_bins(metric, thresholds, target);
  overlay.bin_counts.assign(overlay.bins.size(), 0);
  const TargetView& view = model.target_view(target);
  overlay.node_bin.resize(static_cast<size_t>(model.node_count()));
  for (int node = 0; node < model.node_count(); ++node) {
    const int bin = metric_bin(metric, view.nodes[static_cast<size_t>(node)], thresholds, target);
    overlay.node_bin[static_cast<size_t>(node)] = bin;
    ++overlay.bin_counts[static_cast<size_t>(bin)];
  }
  const size_t scopes = static_cast<size_t>(tree.scope_count());
  overlay.scope_bin.assign(scopes, static_cast<int>(overlay.bins.size()) - 1);
  overlay.scope_verdicts.assign(scopes, {});
  overlay.scope_worst_verdict.assign(scopes, report::Verdict::Safe);
  for (size_t s = 0; s < scopes; ++s) {
    for (int node : tree.scope(static_cast<int>(s)).nodes) {
      overlay.scope_bin[s] = std::min(overlay.scope_bin[s], overlay.node_bin[static_cast<size_t>(node)]);
      const NodeFigures& figures = view.nodes[static_cast<size_t>(node)];
      VerdictCounts& counts = overlay.scope_verdicts[s];
      if (figures.unmeasured()) {
        ++counts.pending;
        continue;
      }
      const report::Verdict verdict = figures.verdict;
      counts.unsafe += verdict == report::Verdict::Unsafe;
      counts.warn += verdict == report::Verdict::Warn;
      counts.safe += verdict == report::Verdict::Safe;
      overlay.scope_worst_verdict[s] = std::max(overlay.scope_worst_verdict[s], verdict);
    }
  }
  return overlay;
}

std::vector<int> worst_nodes(const Scope& scope, const ScopeOverlay& overlay, size_t count) {
  std::vector<int> nodes = scope.nodes;  // in execution order already
  const auto bin = [&](int node) { return overlay.node_bin[static_cast<size_t>(node)]; };
  const size_t kept = std::min(count, nodes.size());
  std::partial_sort(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(kept), nodes.end(),
                    [&](int a, int b) { return bin(a) != bin(b) ? bin(a) < bin(b) : a < b; });
  nodes.resize(kept);
  return nodes;
}

Rgb tone_rgb(BinTone tone) {
  switch (tone) {
    case BinTone::Unsafe: return {235, 66, 61};
    case BinTone::Warn: return {242, 173, 46};
    case BinTone::Safe: return {89, 204, 102};
    case BinTone::Good: return {86, 180, 233};  // Okabe-Ito sky blue
    case BinTone::NotMeasured: break;
  }
  return {110, 110, 122};
}

std::string hex_color(Rgb rgb) {
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", rgb.r & 0xff, rgb.g & 0xff, rgb.b & 0xff);
  return text;
}

double metric_value(GraphMetric metric, const NodeFigures& f) {
  switch (metric) {
    case GraphMetric::Verdict: return f.unmeasured() ? NAN : static_cast<double>(f.verdict);
    case GraphMetric::IsolatedSqnr: return f.isolated_sqnr_db;
    case GraphMetric::PropagatedSqnr: return f.propagated_sqnr_db;
    case GraphMetric::Headroom: return f.headroom_bits;
    case GraphMetric::Overflow: return f.measured_outputs ? static_cast<double>(f.overflow) : NAN;
    case GraphMetric::Flushed: return f.measured_outputs ? f.flush_to_zero_percent : NAN;
  }
  return NAN;
}

// [SECTION] Model Explorer node data

report::json model_explorer_node_data(const ReportModel& model, const std::string& target, GraphMetric metric,
                                      const std::string& graph_id) {
  const report::Thresholds& thresholds = model.report().config.thresholds;
  const std::vector<MetricBin> bins = metric_bins(metric, thresholds, target);
  const TargetView& view = model.target_view(target);
  report::json results = report::json::object();
  for (int node = 0; node < model.node_count(); ++node) {
    const NodeFigures& f = view.nodes[static_cast<size_t>(node)];
    const double value = metric_value(metric, f);
    if (!std::isfinite(value)) continue;
    const BinTone tone = bins[static_cast<size_t>(metric_bin(metric, f, thresholds, target))].tone;
    results[model.node(node).name] = {{"value", value}, {"bgColor", hex_color(tone_rgb(tone))}};
  }
  report::json threshold_list = report::json::array();
  const auto add = [&](double upper, BinTone tone) {
    if (std::isfinite(upper)) threshold_list.push_back({{"value", upper}, {"bgColor", hex_color(tone_rgb(tone))}});
  };
  if (metric == GraphMetric::Verdict) {
    add(0, BinTone::Safe);
    add(1, BinTone::Warn);
    add(2, BinTone::Unsafe);
  } else if (metric == GraphMetric::IsolatedSqnr || metric == GraphMetric::PropagatedSqnr) {
    add(threshold_for(thresholds.sqnr_unsafe_db, target), BinTone::Unsafe);
    add(threshold_for(thresholds.sqnr_warn_db, target), BinTone::Warn);
    add(probes::Divergence::kMaxSqnrDb, BinTone::Safe);
  }
  report::json graph = {{"results", results}, {"thresholds", threshold_list}};
  return report::json{{graph_id, graph}};
}

}  // namespace mpa::ui
