// The dashboard's own audit (`mpaudit view MODEL.onnx`) and its what-if re-runs, without a window: a worker
// thread runs the audit through a runner that the CLI hands over (the UI sees reports, never the runtime),
// publishes partial reports at most every kPublishInterval and the final one at the end, and stops promptly
// when cancelled; the set of nodes pinned to FP32 for the next run; and what a re-run changed. Nothing here
// touches ImGui, so tests/ui/test_live_audit.cpp checks it without a window.
#pragma once
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ui/report_model.h"

namespace mpa::ui {

// The shape of cli::AuditProgress: node runs done and in all (nodes x samples), and the report so far
// (valid during the call only).
using AuditProgressFn =
    std::function<void(int64_t done, int64_t total, const std::function<report::Report()>& snapshot)>;
// Runs one audit with these nodes kept in FP32 and returns its report. Throws when `cancel` turns true (any
// exception: it is dropped), or with a one-line message on a bad model or input.
using AuditRunner = std::function<report::Report(const std::vector<std::string>& keep_fp32,
                                                 const AuditProgressFn& progress, const std::atomic<bool>& cancel)>;

struct AuditSnapshot {
  report::Report report;
  int64_t node_runs_done = ReportModel::kComplete;  // for ReportModel; kComplete: the run's final report
  bool is_final() const { return node_runs_done == ReportModel::kComplete; }
};

struct AuditStatus {
  bool running = false;
  int64_t done = 0, total = 0;  // node runs
  double elapsed_s = 0;
  double eta_s = NAN;  // NaN until a node has run
  std::string error;   // why the last run failed; empty when it did not
};

class LiveAudit {
 public:
  static constexpr std::chrono::milliseconds kPublishInterval{250};
  explicit LiveAudit(AuditRunner runner);
  ~LiveAudit();  // cancels the running audit and waits for it (at most one node)
  // Starts an audit with these nodes kept in FP32, cancelling the one running first.
  void start(std::vector<std::string> keep_fp32);
  // The newest report published since the last call, if any (older unread ones are dropped).
  std::optional<AuditSnapshot> take_snapshot();
  AuditStatus status() const;
  // The last run ended, with its final report published or with an error.
  bool finished() const;

 private:
  void stop();
  AuditRunner runner_;
  std::thread worker_;
  std::atomic<bool> cancel_{false};
  mutable std::mutex mutex_;  // guards what follows
  std::optional<AuditSnapshot> unread_;
  AuditStatus status_;
  std::chrono::steady_clock::time_point started_;
};

// Nodes pinned to FP32 for what-if runs, by name. Only top-level nodes run in a format of their own: pinning
// an inner node of a control-flow node (or a group holding one) pins its top-level owner.
class PinSet {
 public:
  explicit PinSet(const std::vector<std::string>& names = {}) : names_(names.begin(), names.end()) {}
  bool pinned(const ReportModel& model, int node) const;
  // Whether the owners of all these nodes are pinned (false for none).
  bool all_pinned(const ReportModel& model, const std::vector<int>& nodes) const;
  // Pins or unpins the owners of these nodes: one node, or every node of a name-scope group.
  void set(const ReportModel& model, const std::vector<int>& nodes, bool pin);
  void unpin(const std::string& name);
  // In execution order; names the model lacks (given at start) last, sorted.
  std::vector<std::string> names(const ReportModel& model) const;
  // Counts changes: the dashboard re-runs the audit when it moves.
  int version() const { return version_; }

 private:
  std::set<std::string> names_;
  int version_ = 0;
};

// The list for the clipboard: one name per line, then the same as `--keep-fp32 NAME` flags on one line.
std::string keep_fp32_clipboard(const std::vector<std::string>& names);

// What a re-run changed, one line per target: unsafe node counts and each graph output's max relative
// error, before -> after, e.g. "fp16: unsafe 4 -> 1; output logits max_rel_err 3.2e-01 -> 4.1e-04".
std::vector<std::string> what_if_changes(const std::map<std::string, report::TargetSummary>& before,
                                         const std::map<std::string, report::TargetSummary>& after);

}  // namespace mpa::ui
