#include "ui/report_model.h"

#include <algorithm>
#include <atomic>

#include "common/error.h"
#include "probes/format_fit.h"

namespace mpa::ui {

namespace {

// The smaller of two figures where NaN means "not measured" (it loses to any number).
double min_measured(double current, double value) {
  if (std::isnan(value)) return current;
  return std::isnan(current) ? value : std::min(current, value);
}

NodeFigures figures_of(const report::NodeStats& node, const std::string& target, const report::Config& config) {
  NodeFigures f;
  if (auto it = node.targets.find(target); it != node.targets.end()) {
    f.verdict = it->second.verdict;
    f.kept_fp32 = it->second.kept_fp32;
  }
  const std::optional<Format> format = parse_format(target);
  int64_t flushed = 0, nonzero = 0;
  for (const report::TensorStats& tensor : node.tensors) {
    if (!tensor.measured) continue;
    const auto it = tensor.targets.find(target);
    if (it == tensor.targets.end()) continue;
    const report::TensorTarget& t = it->second;
    ++f.measured_outputs;
    const double absmax = tensor.range.absmax();
    f.absmax = std::max(f.absmax, absmax);
    if (format) f.headroom_bits = min_measured(f.headroom_bits, report::headroom_bits(config, *format, absmax));
    f.overflow += t.fit.overflow;
    flushed += t.fit.flush_to_zero;
    nonzero += t.fit.nonzero;
    f.isolated_sqnr_db = min_measured(f.isolated_sqnr_db, t.isolated.sqnr_db());
    f.propagated_sqnr_db = min_measured(f.propagated_sqnr_db, t.propagated.sqnr_db());
    f.propagated_cosine = min_measured(f.propagated_cosine, t.propagated.cosine());
    f.propagated_nonfinite += t.propagated.nonfinite();
    f.isolated_nonfinite += t.isolated.nonfinite();
  }
  f.flush_to_zero_percent = nonzero ? 100.0 * static_cast<double>(flushed) / static_cast<double>(nonzero) : 0;
  return f;
}

void note(Alert& alert, int node_index) {
  if (alert.first_node < 0) alert.first_node = node_index;
  ++alert.node_count;
}

}  // namespace

ReportModel::ReportModel(report::Report report, std::string path, int64_t node_runs_done)
    : report_(std::move(report)), path_(std::move(path)), partial_(node_runs_done != kComplete) {
  static std::atomic<uint64_t> models_made{0};
  identity_ = ++models_made;
  // Nodes are addressed by their position in the report (execution order), which is also their index.
  const auto mix = [this](const std::string& text) {
    structure_hash_ = structure_hash_ * 1099511628211u ^ std::hash<std::string>()(text);
  };
  for (int index = 0; index < node_count(); ++index) {
    const report::NodeStats& node = this->node(index);
    node_by_name_.emplace(node.name, index);
    mix(node.name);
    mix(node.op_type);
    for (const std::string& output : node.outputs) {
      producer_by_tensor_.emplace(output, index);
      mix(output);
    }
    for (const std::string& input : node.inputs) {
      if (!input.empty()) consumers_by_tensor_[input].push_back(index);
      mix(input);
    }
  }

  // Top-level nodes run in execution order, one node run each in the first sample; a control-flow node's
  // inner nodes (scope: their owner's path, e.g. "If_3/then") run inside it, so they are done with it.
  // Their owner is the longest top-level name their scope starts with.
  std::map<std::string, int> top_level_rank;
  for (int index = 0; index < node_count(); ++index)
    if (node(index).scope.empty()) top_level_rank.emplace(node(index).name, static_cast<int>(top_level_rank.size()));
  top_level_of_.resize(static_cast<size_t>(node_count()));
  pending_.resize(static_cast<size_t>(node_count()));
  for (int index = 0; index < node_count(); ++index) {
    int& owner = top_level_of_[static_cast<size_t>(index)];
    owner = index;
    for (std::string prefix = node(index).scope; !prefix.empty();) {
      if (top_level_rank.count(prefix)) {
        owner = node_index(prefix);
        break;
      }
      const size_t slash = prefix.rfind('/');
      prefix.resize(slash == std::string::npos ? 0 : slash);
    }
    const auto rank = top_level_rank.find(node(owner).name);
    pending_[static_cast<size_t>(index)] = partial_ && rank != top_level_rank.end() && rank->second >= node_runs_done;
  }

  for (const std::string& target : report_.config.targets) {
    TargetView view;
    for (int index = 0; index < node_count(); ++index) {
      NodeFigures& f = view.nodes.emplace_back(figures_of(node(index), target, report_.config));
      if (pending(index)) {
        f.pending = true;
        ++view.pending_count;
        continue;
      }
      if (!node(index).scope.empty() && node(index).executions == 0) {
        f.not_run = true;
        ++view.not_run_count;
        continue;
      }
      if (f.overflow > 0) note(view.overflow, index);
      if (f.propagated_nonfinite > 0 || f.isolated_nonfinite > 0) note(view.nonfinite, index);
      if (f.verdict == report::Verdict::Unsafe) note(view.unsafe, index);
      if (const auto t = node(index).targets.find(target); t != node(index).targets.end() && !t->second.consequence.empty()) {
        if (f.verdict == report::Verdict::Unsafe && t->second.roots.empty()) note(view.harm_root, index);
        if (f.verdict == report::Verdict::Warn) note(view.absorbed, index);
      }
      view.unsafe_count += f.verdict == report::Verdict::Unsafe;
      view.warn_count += f.verdict == report::Verdict::Warn;
      view.safe_count += f.verdict == report::Verdict::Safe;
    }
    if (auto it = report_.summary.find(target); it != report_.summary.end())
      view.first_error_jump = node_index(it->second.first_error_jump);
    target_views_.emplace(target, std::move(view));
  }
}

int ReportModel::node_index(const std::string& name) const {
  const auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? -1 : it->second;
}

int ReportModel::producer_of(const std::string& tensor) const {
  const auto it = producer_by_tensor_.find(tensor);
  return it == producer_by_tensor_.end() ? -1 : it->second;
}

const std::vector<int>& ReportModel::consumers_of(const std::string& tensor) const {
  static const std::vector<int> kNone;
  const auto it = consumers_by_tensor_.find(tensor);
  return it == consumers_by_tensor_.end() ? kNone : it->second;
}

void ReportModel::attach_fix(report::FixReport fix, const std::string& path) {
  require(fix.model_sha256 == report_.model_sha256, path + ": a fix report of another model (" + fix.model_path +
                                                        ") than " + path_ + "'s (" + report_.model_path + ")");
  require(std::find(targets().begin(), targets().end(), fix.target) != targets().end(),
          path + ": its target " + fix.target + " is not audited in " + path_);
  kept_by_fix_.assign(report_.nodes.size(), -1);
  fix_figures_.assign(report_.nodes.size(), -1);
  // Fix names top-level nodes only; a subgraph's node of the same name is not the one it means.
  std::map<std::string, int> top_level_nodes;
  for (int index = 0; index < node_count(); ++index)
    if (node(index).scope.empty()) top_level_nodes.emplace(node(index).name, index);
  const auto top_level = [&](const std::string& name) {
    const auto it = top_level_nodes.find(name);
    return it == top_level_nodes.end() ? -1 : it->second;
  };
  for (size_t k = 0; k < fix.keep.size(); ++k) {
    const int index = top_level(fix.keep[k].node);
    require(index >= 0, path + ": keeps node '" + fix.keep[k].node + "', which " + path_ + " does not have");
    kept_by_fix_[static_cast<size_t>(index)] = static_cast<int>(k);
  }
  for (size_t n = 0; n < fix.nodes.size(); ++n)
    if (const int index = top_level(fix.nodes[n].node); index >= 0)
      fix_figures_[static_cast<size_t>(index)] = static_cast<int>(n);
  fix_ = std::move(fix);
}

const report::KeptNode* ReportModel::kept_by_fix(int index) const {
  if (!fix_ || kept_by_fix_[static_cast<size_t>(index)] < 0) return nullptr;
  return &fix_->keep[static_cast<size_t>(kept_by_fix_[static_cast<size_t>(index)])];
}

const report::FixNode* ReportModel::fix_figures(int index) const {
  if (!fix_ || fix_figures_[static_cast<size_t>(index)] < 0) return nullptr;
  return &fix_->nodes[static_cast<size_t>(fix_figures_[static_cast<size_t>(index)])];
}

}  // namespace mpa::ui
