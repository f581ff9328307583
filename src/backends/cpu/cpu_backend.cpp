// The CPU backend: every registered kernel runs on the host, its loops over OpenMP threads and its GEMMs
// through OpenBLAS (backends/cpu/). It is always available, supports every node that has a kernel, and is
// where every node another backend cannot run falls back to.
#include <cstdlib>
#include <thread>

#include "backends/backend.h"
#include "backends/cpu/allocator.h"
#include "backends/cpu/format_rounding.h"
#include "common/parallel.h"

namespace mpa {

namespace {

class CpuBackend : public Backend {
 public:
  CpuBackend() { cpu::keep_freed_tensor_memory(); }
  std::string_view name() const override { return "cpu"; }
  Device device() const override { return {}; }
  Support available() const override { return {}; }
  std::string describe() const override {
    const char* kernels = std::getenv("OPENBLAS_CORETYPE");
    return "host CPU, " + std::to_string(std::thread::hardware_concurrency()) +
           " hardware threads (OpenMP loops), GEMM through OpenBLAS with " +
           (kernels && *kernels ? std::string(kernels) + " kernels (OPENBLAS_CORETYPE)" : "kernels chosen from the CPU's flags");
  }
  Support supports(const Node& node, int64_t opset, const ExecConfig&) const override {
    const OpRegistry& registry = OpRegistry::instance();
    if (registry.find(name(), node.domain, node.op_type, opset)) return {};
    return {false, registry.why_unsupported(name(), node.domain, node.op_type, opset)};
  }
  void run(const OpKernel& kernel, KernelContext& ctx) const override { kernel.compute(ctx); }
  Tensor upload(const Tensor& host) const override { return host; }
  Tensor download(const Tensor& on_device) const override { return on_device; }
  void store_in_format(Tensor& tensor, Format storage, double scale) const override {
    if (storage == Format::FP64) tensor = cpu::widen_to_double(tensor);
    else cpu::round_tensor_to_format(tensor, storage, scale);
  }
  Tensor convert(const Tensor& tensor, Format storage, double scale) const override {
    return storage == Format::FP64 ? cpu::widen_to_double(tensor) : cpu::tensor_in_format(tensor, storage, scale);
  }
  double absmax(const Tensor& tensor) const override { return cpu::absmax_of(tensor); }
  void use_threads(int threads) const override { set_num_threads(threads); }
};

const CpuBackend& cpu_backend() {
  static const CpuBackend cpu;
  return cpu;
}

}  // namespace

const Backend& host_backend() { return cpu_backend(); }

}  // namespace mpa
