// The seam every device plugs into (../shared/docs/backends.md): a backend says whether it is available
// on this machine and why not, which nodes it supports (with a reason when not), owns the buffers of the
// tensors on its device, moves values to and from the host when the executor asks, stores values in a
// format, and runs a node's kernel. The executor (runtime/session) places each node on the backend the
// user picked (`--device`) when it supports the node, else on the CPU, which runs every registered kernel,
// and makes every transfer itself; `mpaudit devices` lists the backends with their state.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/probe_chunks.h"
#include "ops/op.h"
#include "tensor/device.h"

namespace mpa {

// Whether something can be done, and in words why not.
struct Support {
  bool ok = true;
  std::string reason;
};

// What the audit's probes ask of a device where its values are (../shared/docs/backends.md §4): per chunk of
// `chunk` consecutive elements of `reference`, its range and exponent histogram, its fit to formats, and
// the divergence of each run (a tensor of the same size) from it, with the run's histogram where asked.
// Only these statistics come back to the host, which folds them in chunk order as probes/ does.
struct ProbeRequest {
  const Tensor* reference = nullptr;  // floating, on the backend's device
  bool reference_figures = false;     // its range and exponent histogram
  std::vector<kernels::FitBounds> fits;
  std::vector<const Tensor*> runs;   // floating, on the backend's device
  std::vector<bool> run_histograms;  // per run
  kernels::DivergenceParams params{};
  int64_t chunk = 0;
};
// The statistics by chunk, in element order: range[c], hist[c], fits[c * fits + f], runs[c * runs + j] and
// run_hists[c * runs + j] (zeros where not asked).
struct ProbeChunks {
  std::vector<kernels::RangeChunk> range;
  std::vector<kernels::HistogramChunk> hist;
  std::vector<kernels::FitChunk> fits;
  std::vector<kernels::DivergenceChunk> runs;
  std::vector<kernels::HistogramChunk> run_hists;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // what --device names it: "cpu"
  virtual Device device() const = 0;          // where the tensors it makes live
  virtual Support available() const = 0;      // on this machine, or why not
  virtual std::string describe() const = 0;   // the device in words, for `mpaudit devices`
  // The kernel table it runs (OpRegistry's backend key): its own name, unless it runs another's kernels.
  virtual std::string_view kernel_table() const { return name(); }
  // Whether it runs `node` (at `opset`) under `config`; static: no allocation, no device work.
  virtual Support supports(const Node& node, int64_t opset, const ExecConfig& config) const = 0;
  // Runs one node: its kernel on the context's inputs (on this device), filling the context's outputs (on
  // this device). May return before the device is done; synchronize() waits.
  virtual void run(const OpKernel& kernel, KernelContext& ctx) const = 0;
  virtual void synchronize() const {}
  // The device's own time for the node this thread last ran here (its kernels, as CUPTI or events time
  // them), where the backend can tell; none where the executor's wall clock is the node's time (the CPU
  // runs a node synchronously).
  virtual std::optional<double> last_run_device_seconds() const { return std::nullopt; }
  // Whether the runs that follow will ask last_run_device_seconds (a device may prepare a profiler for it).
  virtual void time_nodes(bool /*on*/) const {}
  // A host tensor copied onto this device, and one of this device's tensors copied to the host: the
  // executor's transfers, explicit and counted. The host backend is never asked.
  virtual Tensor upload(const Tensor& host) const = 0;
  virtual Tensor download(const Tensor& on_device) const = 0;
  // The executor's format storage (runtime/precision.h): a node's float outputs stored in `storage` in
  // place, with a per-tensor `scale` (FP8 recipes; 1 for none); FP64 widens float32 to float64.
  virtual void store_in_format(Tensor& tensor, Format storage, double scale) const = 0;
  // A copy of a value on `storage`'s grid, for a consumer computing in another format than its producer.
  virtual Tensor convert(const Tensor& tensor, Format storage, double scale) const = 0;
  // The largest finite |x| of a floating tensor (0 for other element types): FP8 per-tensor scales.
  virtual double absmax(const Tensor& tensor) const = 0;
  // The probes' statistics of tensors on this device (ProbeRequest), computed there; none where it does not
  // compute them (the executor then shows the observer host copies of its values) or cannot for this request.
  virtual bool computes_probes() const { return false; }
  virtual std::optional<ProbeChunks> probe(const ProbeRequest& /*request*/) const { return std::nullopt; }
  // Threads its kernels may use in the runs that follow.
  virtual void use_threads(int /*threads*/) const {}
  // Every choice it makes under `config` that changes numbers (library compute types, math modes, algorithm
  // policy, summation order), as (what, how) pairs for the report; none for the CPU, whose arithmetic
  // docs/numerics.md describes.
  virtual std::vector<std::pair<std::string, std::string>> numerics(const ExecConfig& /*config*/) const { return {}; }
};

// The backends of this build and those added since (tests, loaded modules), the CPU's first.
const std::vector<const Backend*>& backends();
// Adds a backend (a test's, or a loaded module's) to backends(); it must outlive every session using it.
void add_backend(const Backend& backend);
// Loads the backends of a module family ("cuda") once; where the module cannot be loaded, adds a backend
// named after the family, unavailable, whose reason says why (backends/modules.h).
void load_backends_of(const std::string& family);
// The backend `--device NAME` names, available on this machine; fails (mpa::Error) naming the backends
// there are, or why the named one is unavailable.
const Backend& backend_named(const std::string& name);
// The backend owning tensors on `device` (fails for a device no backend owns).
const Backend& backend_of(const Device& device);
// The CPU backend: every node falls back to it, and it stores and converts the audit's host tensors.
const Backend& host_backend();

}  // namespace mpa
