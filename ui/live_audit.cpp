#include "ui/live_audit.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace mpa::ui {

LiveAudit::LiveAudit(AuditRunner runner) : runner_(std::move(runner)) {}

LiveAudit::~LiveAudit() { stop(); }

void LiveAudit::stop() {
  if (!worker_.joinable()) return;
  cancel_ = true;
  worker_.join();
  cancel_ = false;
}

void LiveAudit::start(std::vector<std::string> keep_fp32) {
  stop();
  {
    const std::lock_guard lock(mutex_);
    unread_.reset();  // the cancelled run's reports would only flash by
    status_ = AuditStatus{};
    status_.running = true;
    started_ = std::chrono::steady_clock::now();
  }
  worker_ = std::thread([this, keep_fp32 = std::move(keep_fp32)] {
    std::optional<std::chrono::steady_clock::time_point> last_publish;
    const AuditProgressFn progress = [&](int64_t done, int64_t total, const std::function<report::Report()>& snapshot) {
      const auto now = std::chrono::steady_clock::now();
      {
        const std::lock_guard lock(mutex_);
        status_.done = done;
        status_.total = total;
      }
      // The first call publishes the nodes before any has run; the last node's report follows as the final one.
      if (done == total || (last_publish && now - *last_publish < kPublishInterval)) return;
      last_publish = now;
      AuditSnapshot published{snapshot(), done};
      const std::lock_guard lock(mutex_);
      unread_ = std::move(published);
    };
    std::optional<AuditSnapshot> finished;
    std::string error;
    try {
      finished = AuditSnapshot{runner_(keep_fp32, progress, cancel_)};
    } catch (const std::exception& e) {
      if (!cancel_) error = e.what();
    }
    const std::lock_guard lock(mutex_);
    if (finished) unread_ = std::move(finished);
    status_.error = error;
    status_.running = false;
    status_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  });
}

std::optional<AuditSnapshot> LiveAudit::take_snapshot() {
  const std::lock_guard lock(mutex_);
  return std::exchange(unread_, std::nullopt);
}

AuditStatus LiveAudit::status() const {
  const std::lock_guard lock(mutex_);
  AuditStatus s = status_;
  if (s.running) {
    s.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (s.done > 0) s.eta_s = s.elapsed_s * static_cast<double>(s.total - s.done) / static_cast<double>(s.done);
  }
  return s;
}

bool LiveAudit::finished() const {
  const std::lock_guard lock(mutex_);
  return !status_.running;
}

bool PinSet::pinned(const ReportModel& model, int node) const {
  return names_.count(model.node(model.top_level_of(node)).name) > 0;
}

bool PinSet::all_pinned(const ReportModel& model, const std::vector<int>& nodes) const {
  return !nodes.empty() && std::all_of(nodes.begin(), nodes.end(), [&](int node) { return pinned(model, node); });
}

void PinSet::set(const ReportModel& model, const std::vector<int>& nodes, bool pin) {
  const size_t before = names_.size();
  for (int node : nodes) {
    const std::string& owner = model.node(model.top_level_of(node)).name;
    if (pin)
      names_.insert(owner);
    else
      names_.erase(owner);
  }
  if (names_.size() != before) ++version_;
}

void PinSet::unpin(const std::string& name) { version_ += static_cast<int>(names_.erase(name)); }

std::vector<std::string> PinSet::names(const ReportModel& model) const {
  std::vector<std::string> ordered(names_.begin(), names_.end());
  const auto position = [&](const std::string& name) {
    const int index = model.node_index(name);
    return index < 0 ? model.node_count() : index;
  };
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const std::string& a, const std::string& b) { return position(a) < position(b); });
  return ordered;
}

std::string keep_fp32_clipboard(const std::vector<std::string>& names) {
  std::string lines, flags;
  for (const std::string& name : names) {
    lines.append(name).append("\n");
    // Single quotes keep names with spaces or shell characters one argument.
    flags.append(flags.empty() ? "" : " ").append("--keep-fp32 '").append(name).append("'");
  }
  return names.empty() ? "" : lines + flags + "\n";
}

std::vector<std::string> what_if_changes(const std::map<std::string, report::TargetSummary>& before,
                                         const std::map<std::string, report::TargetSummary>& after) {
  const auto number = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1e", value);
    return std::string(text);
  };
  std::vector<std::string> lines;
  for (const auto& [target, now] : after) {
    const auto then = before.find(target);
    if (then == before.end()) continue;
    std::string line = target + ": unsafe " + std::to_string(then->second.unsafe_nodes.size()) + " -> " +
                       std::to_string(now.unsafe_nodes.size());
    for (const report::OutputSummary& output : now.outputs) {
      const auto was = std::find_if(then->second.outputs.begin(), then->second.outputs.end(),
                                    [&](const report::OutputSummary& o) { return o.name == output.name; });
      if (was == then->second.outputs.end()) continue;
      line +=
          "; output " + output.name + " max_rel_err " + number(was->max_rel_err) + " -> " + number(output.max_rel_err);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace mpa::ui
