// A backend that behaves like a device, for tests only (../shared/docs/backends.md, "Fake device"): its
// tensors live in its own memory on device fake:0, which the host cannot read without a transfer (raw() on
// them fails); it runs the ops of an allow-list, each by copying its inputs out, running the CPU kernel and
// copying the outputs back, so its numerics are the CPU's and any difference in a result is a seam bug. It
// counts transfers, and guards every buffer: bytes written past the end, found when the buffer is freed,
// are counted, and freed memory is poisoned with NaN bytes.
#pragma once
#include <atomic>
#include <mutex>
#include <set>
#include <string>

#include "backends/backend.h"

namespace mpa::testing {

class FakeBackend : public Backend {
 public:
  // The fake, added to backends() on first use: elementwise ops, MatMul and Reshape unless allow() says otherwise.
  static FakeBackend& instance();

  std::string_view name() const override { return "fake"; }
  Device device() const override { return {Device::Kind::Fake, 0}; }
  Support available() const override { return {}; }
  std::string describe() const override { return "test device: host memory behind transfers, CPU kernels"; }
  std::string_view kernel_table() const override { return "cpu"; }
  Support supports(const Node& node, int64_t opset, const ExecConfig& config) const override;
  void run(const OpKernel& kernel, KernelContext& ctx) const override;
  Tensor upload(const Tensor& host) const override;
  Tensor download(const Tensor& on_device) const override;
  void store_in_format(Tensor& tensor, Format storage, double scale) const override;
  Tensor convert(const Tensor& tensor, Format storage, double scale) const override;
  double absmax(const Tensor& tensor) const override;
  // The time of the kernel alone, without the fake's copies: a device clock, as CUPTI would give one.
  std::optional<double> last_run_device_seconds() const override;
  std::vector<std::pair<std::string, std::string>> numerics(const ExecConfig&) const override {
    return {{"kernels", "the CPU's, behind transfers"}};
  }

  // With probe_here(true), it computes the audit's probes where its tensors are, as a GPU does: per chunk,
  // element by element with the shared per-element code (kernels/probe_chunks.h), on its own memory.
  bool computes_probes() const override { return probes_; }
  std::optional<ProbeChunks> probe(const ProbeRequest& request) const override;
  void probe_here(bool on) { probes_ = on; }

  // The ops it runs (by op type); the others fall back to the CPU.
  void allow(std::set<std::string> ops);
  static std::set<std::string> default_ops();
  struct Counts {
    int64_t uploads = 0, downloads = 0, runs = 0, live_buffers = 0, overruns = 0;
  };
  Counts counts() const;
  void reset_counts();

 private:
  FakeBackend();
  // A host copy of a tensor of this device, or a device copy of a host tensor: the fake's own moves, which
  // are not the executor's transfers and are not counted.
  Tensor to_host(const Tensor& on_device) const;
  Tensor to_device(const Tensor& host) const;

  std::atomic<bool> probes_{false};
  mutable std::mutex mutex_;
  std::set<std::string> ops_;
  mutable std::atomic<int64_t> uploads_{0}, downloads_{0}, runs_{0};
};

// Allows `ops` on the fake for the scope's lifetime, then the default list again.
class FakeOps {
 public:
  explicit FakeOps(std::set<std::string> ops) { FakeBackend::instance().allow(std::move(ops)); }
  ~FakeOps() { FakeBackend::instance().allow(FakeBackend::default_ops()); }
  FakeOps(const FakeOps&) = delete;
  FakeOps& operator=(const FakeOps&) = delete;
};

}  // namespace mpa::testing
