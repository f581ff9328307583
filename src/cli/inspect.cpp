#include <algorithm>
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "model/loader.h"
#include "runtime/session.h"

namespace mpa::cli {

namespace {

std::string describe(const ValueInfo& v) {
  if (!v.is_tensor) return v.name + ": non-tensor value";
  std::string dims;
  for (size_t i = 0; i < v.dims.size(); ++i) {
    dims += i ? "x" : "";
    dims += v.dims[i] >= 0 ? std::to_string(v.dims[i]) : (v.dim_params[i].empty() ? "?" : v.dim_params[i]);
  }
  return v.name + ": " + onnx_type_name(v.elem_type) + " " + (v.has_shape ? (dims.empty() ? "scalar" : dims) : "(shape not declared)");
}

void count_ops(const Graph& g, std::map<std::string, int>& ops, int64_t& params, uint64_t& bytes) {
  for (const auto& [name, t] : g.initializers) {
    params += t.numel();
    bytes += t.nbytes();
  }
  for (const Node& n : g.nodes) {
    ++ops[(n.domain.empty() ? "" : n.domain + ".") + n.op_type];
    for (const auto& [key, a] : n.attributes) {
      if (a.g) count_ops(*a.g, ops, params, bytes);
      for (const auto& sub : a.graphs) count_ops(*sub, ops, params, bytes);
    }
  }
}

int inspect(const std::string& path) {
  const Model model = load_model(path);
  const Graph& g = *model.graph;
  std::printf("model: %s\nir_version: %lld  producer: %s\nopsets:", path.c_str(), static_cast<long long>(model.ir_version),
              model.producer.empty() ? "(none)" : model.producer.c_str());
  for (const auto& [domain, version] : g.opsets)
    std::printf(" %s=%lld", domain.empty() ? "ai.onnx" : domain.c_str(), static_cast<long long>(version));
  std::printf("\ninputs:\n");
  for (const ValueInfo& v : g.inputs) std::printf("  %s\n", describe(v).c_str());
  std::printf("outputs:\n");
  for (const ValueInfo& v : g.outputs) std::printf("  %s\n", describe(v).c_str());
  std::map<std::string, int> ops;
  int64_t params = 0;
  uint64_t bytes = 0;
  count_ops(g, ops, params, bytes);
  std::vector<std::pair<std::string, int>> histogram(ops.begin(), ops.end());
  std::sort(histogram.begin(), histogram.end(), [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  std::printf("nodes: %zu (top level)\nparameters: %lld (%.2f MB)\nops:\n", g.nodes.size(), static_cast<long long>(params),
              static_cast<double>(bytes) / 1e6);
  for (const auto& [op, count] : histogram) std::printf("  %6d  %s\n", count, op.c_str());
  const auto unsupported = find_unsupported_nodes(g);
  std::map<std::string, int> reasons;
  for (const auto& u : unsupported) ++reasons[u.reason];
  if (reasons.empty()) {
    std::printf("unsupported ops: none\n");
  } else {
    std::printf("unsupported ops:\n");
    for (const auto& [reason, count] : reasons) std::printf("  %6d  %s\n", count, reason.c_str());
  }
  return 0;
}

}  // namespace

Action add_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  app.add_option("model", *path, "ONNX model file")->required();
  return [path] { return inspect(*path); };
}

}  // namespace mpa::cli
