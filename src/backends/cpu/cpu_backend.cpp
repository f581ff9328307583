// The CPU backend: every registered kernel runs on the host, its loops over OpenMP threads and its GEMMs
// through OpenBLAS (backends/cpu/). It is always available and supports every node that has a kernel.
#include <cstdlib>
#include <thread>

#include "backends/backend.h"

namespace mpa {

namespace {

class CpuBackend : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  Support available() const override { return {}; }
  std::string describe() const override {
    const char* kernels = std::getenv("OPENBLAS_CORETYPE");
    return "host CPU, " + std::to_string(std::thread::hardware_concurrency()) +
           " hardware threads (OpenMP loops), GEMM through OpenBLAS with " +
           (kernels && *kernels ? std::string(kernels) + " kernels (OPENBLAS_CORETYPE)" : "kernels chosen from the CPU's flags");
  }
  Support supports(const Node& node, int64_t opset, const ExecConfig&) const override {
    const OpRegistry& registry = OpRegistry::instance();
    if (registry.find(node.domain, node.op_type, opset)) return {};
    return {false, registry.why_unsupported(node.domain, node.op_type, opset)};
  }
  void run(const OpKernel& kernel, KernelContext& ctx) const override { kernel.compute(ctx); }
};

}  // namespace

const std::vector<const Backend*>& backends() {
  static const CpuBackend cpu;
  static const std::vector<const Backend*> all = {&cpu};
  return all;
}

const Backend& backend_named(const std::string& name) {
  std::string known;
  for (const Backend* b : backends()) {
    if (b->name() == name) {
      const Support here = b->available();
      if (!here.ok) fail("--device " + name + ": not available on this machine: " + here.reason);
      return *b;
    }
    known += (known.empty() ? "" : ", ") + std::string(b->name());
  }
  fail("--device " + name + ": no such backend in this build (it has: " + known + ")");
}

}  // namespace mpa
