// An NVTX range, opened by the executor around each node and, inside it, each stream's run ("fp16"):
// Nsight Systems shows the node timeline when it traces the process; without a tool attached NVTX calls are
// no-ops. Header-only NVTX3 from the CUDA toolkit; compiled out when the toolkit is absent.
#pragma once
#if defined(MPA_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace mpa {

class NvtxRange {
 public:
#if defined(MPA_HAVE_NVTX)
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
#else
  explicit NvtxRange(const char*) {}
#endif
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace mpa
