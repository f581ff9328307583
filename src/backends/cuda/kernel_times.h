// Each node run's GPU kernel time from CUPTI activity records, the bookkeeping alone (no CUDA, so the CPU
// tests check it): the executor's node runs are tagged with an external correlation id (kineto's way,
// pytorch/kineto libkineto/src/CuptiActivityApi.cpp), CUPTI reports which of its own correlation ids ran
// under each tag and, separately and in any order, each kernel's start and end under its correlation id.
// A node's time is the sum of its kernels' durations (kernels on one stream do not overlap).
#pragma once
#include <cstdint>
#include <map>
#include <optional>

namespace mpa::cuda {

class KernelTimes {
 public:
  // CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: launch `correlation` happened under tag `external`.
  void correlate(uint32_t correlation, uint64_t external) {
    tag_of_[correlation] = external;
    if (auto pending = unmatched_ns_.find(correlation); pending != unmatched_ns_.end()) {
      ns_of_[external] += pending->second;
      unmatched_ns_.erase(pending);
    }
  }
  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: a kernel of launch `correlation` ran from start_ns to end_ns.
  void kernel(uint32_t correlation, uint64_t start_ns, uint64_t end_ns) {
    const uint64_t ns = end_ns > start_ns ? end_ns - start_ns : 0;
    if (auto tag = tag_of_.find(correlation); tag != tag_of_.end())
      ns_of_[tag->second] += ns;
    else
      unmatched_ns_[correlation] += ns;
  }
  // The kernel time of the launches tagged `external` (0 for a node that launched none), then forgets the tag.
  double take_seconds(uint64_t external) {
    double seconds = 0;
    if (auto it = ns_of_.find(external); it != ns_of_.end()) {
      seconds = static_cast<double>(it->second) * 1e-9;
      ns_of_.erase(it);
    }
    for (auto it = tag_of_.begin(); it != tag_of_.end();)
      it = it->second == external ? tag_of_.erase(it) : std::next(it);
    return seconds;
  }
  // Kernels whose launch no tag claimed (launched outside a node, or not yet correlated).
  size_t unmatched() const { return unmatched_ns_.size(); }

 private:
  std::map<uint32_t, uint64_t> tag_of_;        // correlation id -> external tag
  std::map<uint64_t, uint64_t> ns_of_;         // external tag -> summed kernel nanoseconds
  std::map<uint32_t, uint64_t> unmatched_ns_;  // correlation id -> nanoseconds, before its tag is known
};

}  // namespace mpa::cuda
