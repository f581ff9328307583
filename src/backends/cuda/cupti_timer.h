// Per-node GPU kernel time from CUPTI's activity API (../shared/docs/backends.md §7, after pytorch/kineto):
// libcupti is loaded at run time (the module runs without it), kernel and external-correlation records are
// collected in pooled buffers, and each node run is tagged with an external correlation id; its time is the
// sum of its kernels (backends/cuda/kernel_times.h). Where CUPTI cannot be used (no library, insufficient
// privileges), available() says why and the backend times nodes with CUDA events.
#pragma once
#include <cstdint>
#include <string>

namespace mpa::cuda {

class CuptiTimer {
 public:
  // The process's timer, collecting from its first call; nullptr where CUPTI cannot be used (then why_not()).
  static CuptiTimer* start();
  static const std::string& why_not();

  // Tags the launches made until end() with a new id, returned.
  uint64_t begin();
  void end();
  // The kernel time of the launches tagged `id`, once they have finished (the caller synchronised).
  double seconds(uint64_t id);
};

}  // namespace mpa::cuda
