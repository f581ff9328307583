// The CPU backend: every registered kernel runs on the host, its loops over OpenMP threads and its GEMMs
// through OpenBLAS (backends/cpu/). It is always available, supports every node that has a kernel, and is
// where every node another backend cannot run falls back to.
#include <cstdlib>
#include <thread>

#include "backends/backend.h"
#include "backends/cpu/allocator.h"
#include "backends/cpu/format_rounding.h"
#include "backends/modules.h"
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

std::vector<const Backend*>& registered() {
  static std::vector<const Backend*> all = {&cpu_backend()};
  return all;
}

}  // namespace

const std::vector<const Backend*>& backends() { return registered(); }

void add_backend(const Backend& backend) {
  for (const Backend* b : registered())
    if (!(b->name() != backend.name())) fail("a backend named '" + std::string(backend.name()) + "' is already added");
  registered().push_back(&backend);
}

const Backend& host_backend() { return cpu_backend(); }

const Backend& backend_of(const Device& device) {
  for (const Backend* b : backends())
    if (b->device() == device) return *b;
  fail("no backend owns device " + device.name());
}

const Backend& backend_named(const std::string& name) {
  // A module's backends are loaded when first named: "cuda" and "cuda:1" both load the CUDA module.
  const std::string family = name.substr(0, name.find(':'));
  for (const std::string& module : module_families())
    if (module == family) load_backend_module(module);
  std::string known;
  // A family's name alone is its first device; a module that could not be loaded stands as its family's name.
  for (const std::string& wanted : {name, name + ":0", family}) {
    for (const Backend* b : backends()) {
      if (b->name() != wanted) continue;
      const Support here = b->available();
      if (!here.ok) fail("--device " + name + ": not available on this machine: " + here.reason);
      return *b;
    }
  }
  for (const Backend* b : backends()) known += (known.empty() ? "" : ", ") + std::string(b->name());
  fail("--device " + name + ": no such backend in this build (it has: " + known + ")");
}

}  // namespace mpa
