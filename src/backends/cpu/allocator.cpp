#include "backends/cpu/allocator.h"

#include <malloc.h>

#include <mutex>

namespace mpa::cpu {

void keep_freed_tensor_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    // glibc caps the mmap threshold at 32 MiB on 64-bit (a larger value is refused): tensors up to that
    // come from the heap, where freed blocks are reused, and the heap's top is not given back after frees.
    constexpr int kMaxMmapThreshold = 32 << 20;
    mallopt(M_MMAP_THRESHOLD, kMaxMmapThreshold);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}

}  // namespace mpa::cpu
