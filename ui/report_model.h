// What the dashboard shows, derived once from a report: the report itself, per-node figures for each
// target format (the worst over a node's float outputs, as the table, plot and alerts show them), and the
// producer/consumer links between nodes. A model can also hold a running audit's partial report: nodes the
// audit has not run yet are pending, shown greyed and counted apart, never as safe; so are nodes of subgraph
// branches that no audited sample took (not run). Panels read it through a
// const reference; what the user picks (target format, selected node) lives in DashboardSelection, which
// panels may change.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/fix_report.h"
#include "reports/report.h"

namespace mpa::ui {

// One node's figures against one target format. NaN where nothing was measured (e.g. integer outputs, or
// an output that is NaN everywhere in the target run).
struct NodeFigures {
  report::Verdict verdict = report::Verdict::Safe;
  bool pending = false;               // not run yet by a running audit (its verdict means nothing yet)
  bool not_run = false;               // in a subgraph branch or loop that no audited sample ran (executions 0)
  // No figures to show: greyed, counted apart and left out of colours, never shown as safe.
  bool unmeasured() const { return pending || not_run; }
  bool kept_fp32 = false;             // computed in FP32 in this target's runs
  double absmax = 0;                  // reference, largest over outputs
  double headroom_bits = NAN;         // smallest over outputs (negative: overflow)
  int64_t overflow = 0;               // reference values beyond the format's max, summed over outputs
  double flush_to_zero_percent = 0;   // of nonzero reference values, over all outputs
  double isolated_sqnr_db = NAN;      // smallest over outputs
  double propagated_sqnr_db = NAN;
  double propagated_cosine = NAN;
  int64_t propagated_nonfinite = 0;   // NaN/Inf in the propagated run where the reference is finite
  int64_t isolated_nonfinite = 0;
  int measured_outputs = 0;           // float outputs with figures against this target
};

// The first node (in execution order) that shows a problem, and how many nodes show it.
struct Alert {
  int first_node = -1;
  int node_count = 0;
};

struct TargetView {
  std::vector<NodeFigures> nodes;  // by node index
  Alert overflow, nonfinite, unsafe;
  // Traced consequences (report::Consequence): unsafe nodes whose own saturation does the harm (not
  // those that make NaN of what they read), and saturation that downstream nodes absorb (warns).
  Alert harm_root, absorbed;
  int first_error_jump = -1;
  int unsafe_count = 0, warn_count = 0, safe_count = 0, pending_count = 0, not_run_count = 0;
};

class ReportModel {
 public:
  static constexpr int64_t kComplete = -1;
  // `node_runs_done`: for a running audit's partial report, the node runs done so far (nodes x samples, the
  // first sample's top-level nodes first, in execution order); kComplete for a finished report.
  ReportModel(report::Report report, std::string path, int64_t node_runs_done = kComplete);

  const report::Report& report() const { return report_; }
  const std::string& path() const { return path_; }
  const std::vector<std::string>& targets() const { return report_.config.targets; }
  const TargetView& target_view(const std::string& target) const { return target_views_.at(target); }
  const report::NodeStats& node(int index) const { return report_.nodes[static_cast<size_t>(index)]; }
  int node_count() const { return static_cast<int>(report_.nodes.size()); }
  // -1 when no node has that name.
  int node_index(const std::string& name) const;
  // The node that writes `tensor` (-1 for graph inputs and initializers), and those that read it.
  int producer_of(const std::string& tensor) const;
  const std::vector<int>& consumers_of(const std::string& tensor) const;
  // The top-level node that runs `index`: itself, or the control-flow node whose subgraph holds it (what a
  // what-if pins in its place).
  int top_level_of(int index) const { return top_level_of_[static_cast<size_t>(index)]; }
  bool partial() const { return partial_; }  // a running audit's snapshot, not its final report
  bool pending(int index) const { return pending_[static_cast<size_t>(index)] != 0; }
  // Equal for reports with the same nodes and links, whatever their figures: a panel keeps what it derived
  // from the graph alone (the graph layout) across a running audit's snapshots.
  size_t structure_hash() const { return structure_hash_; }
  // No two models made in this process share it (an address can be reused): what a panel's cache is keyed by.
  uint64_t identity() const { return identity_; }

  // A fix report over this audit (`mpaudit view AUDIT.json --fix FIX.json`): the keep-set highlighted, each
  // node's figures with the whole model in the target format and with the set. Fails (mpa::Error) naming
  // `path` when it is of another model, its target is not audited here, or it keeps a node this report lacks.
  void attach_fix(report::FixReport fix, const std::string& path);
  const report::FixReport* fix() const { return fix_ ? &*fix_ : nullptr; }
  // The node's entry in the fix report's keep-set and per-node figures; null where it has none.
  const report::KeptNode* kept_by_fix(int index) const;
  const report::FixNode* fix_figures(int index) const;

 private:
  report::Report report_;
  std::string path_;
  std::map<std::string, TargetView> target_views_;
  std::map<std::string, int> node_by_name_, producer_by_tensor_;
  std::map<std::string, std::vector<int>> consumers_by_tensor_;
  std::vector<int> top_level_of_;
  std::vector<char> pending_;
  bool partial_ = false;
  size_t structure_hash_ = 0;
  uint64_t identity_;
  std::optional<report::FixReport> fix_;
  std::vector<int> kept_by_fix_, fix_figures_;  // per node: index into fix_->keep / fix_->nodes, or -1
};

class PinSet;

// What the user picked; shared by every panel so that a click anywhere selects everywhere.
struct DashboardSelection {
  std::string target;
  int node = -1;
  // What-if (`mpaudit view MODEL.onnx` only, else null): the nodes to pin to FP32; the dashboard re-runs
  // the audit when a panel changes them.
  PinSet* pins = nullptr;
  // A panel asks for the node table with this filter (e.g. a group's nodes, to sort them); the dashboard
  // shows the table and clears it.
  std::string table_filter_request;
  void select_node(int index) {
    changed_this_frame = changed_this_frame || index != node;
    node = index;
  }
  // Whether the selection moved in this or the previous frame: a panel drawn before the one the user
  // clicked in learns of the change one frame late, and scrolls to the node then.
  bool node_changed_recently() const { return changed_this_frame || changed_last_frame; }
  void begin_frame() {
    changed_last_frame = changed_this_frame;
    changed_this_frame = false;
  }

 private:
  bool changed_this_frame = false, changed_last_frame = false;
};

}  // namespace mpa::ui
