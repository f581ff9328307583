#include "support/fake_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "backends/cpu/format_rounding.h"
#include "probes/probe_common.h"

namespace mpa::testing {

namespace {

constexpr size_t kGuardBytes = 64;
constexpr std::byte kGuard{0xA5}, kPoison{0xFF};  // 0xFF bytes read as NaN in every float format
std::atomic<int64_t> live_buffers{0}, overruns{0};
thread_local double kernel_seconds = 0;  // of the node this thread last ran on the fake

// A buffer of the fake device: the bytes, then guard bytes checked when it is freed.
std::shared_ptr<std::byte[]> allocate(size_t bytes) {
  std::byte* block = new std::byte[bytes + kGuardBytes];
  std::memset(block + bytes, static_cast<int>(kGuard), kGuardBytes);
  ++live_buffers;
  return std::shared_ptr<std::byte[]>(block, [bytes](std::byte* p) {
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (p[bytes + i] != kGuard) {
        ++overruns;
        break;
      }
    std::memset(p, static_cast<int>(kPoison), bytes);
    --live_buffers;
    delete[] p;
  });
}

}  // namespace

FakeBackend::FakeBackend() : ops_(default_ops()) {}

FakeBackend& FakeBackend::instance() {
  static FakeBackend* fake = [] {
    auto* made = new FakeBackend;  // never destroyed: tensors of its device may outlive static destruction
    add_backend(*made);
    return made;
  }();
  return *fake;
}

std::set<std::string> FakeBackend::default_ops() {
  return {"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Pow", "Erf", "MatMul", "Reshape"};
}

void FakeBackend::allow(std::set<std::string> ops) {
  std::lock_guard<std::mutex> lock(mutex_);
  ops_ = std::move(ops);
}

Support FakeBackend::supports(const Node& node, int64_t opset, const ExecConfig&) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ops_.count(node.op_type)) return {false, "fake: " + node.op_type + " not in allow-list"};
  }
  return host_backend().supports(node, opset, ExecConfig{});
}

Tensor FakeBackend::to_host(const Tensor& on_device) const {
  if (!on_device.defined()) return on_device;
  Tensor host(on_device.dtype(), on_device.shape());
  if (host.nbytes() > 0) std::memcpy(host.raw(), on_device.device_raw(device()), host.nbytes());
  return host;
}

Tensor FakeBackend::to_device(const Tensor& host) const {
  if (!host.defined()) return host;
  if (!(host.dtype() != DType::String)) fail("fake: string tensors do not go to a device");
  std::shared_ptr<std::byte[]> bytes = allocate(host.nbytes());
  if (host.nbytes() > 0) std::memcpy(bytes.get(), host.raw(), host.nbytes());
  return Tensor::on_device(host.dtype(), host.shape(), device(), std::move(bytes));
}

Tensor FakeBackend::upload(const Tensor& host) const {
  ++uploads_;
  return to_device(host);
}

Tensor FakeBackend::download(const Tensor& on_device) const {
  ++downloads_;
  return to_host(on_device);
}

void FakeBackend::run(const OpKernel& kernel, KernelContext& ctx) const {
  ++runs_;
  std::vector<Tensor> inputs(ctx.num_inputs());
  std::vector<const Tensor*> views(ctx.num_inputs(), nullptr);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (const Tensor* in = ctx.optional_input(i))  // host inputs (OpTraits::host_inputs) come on the host
      views[i] = in->device().is_host() ? in : &(inputs[i] = to_host(*in));  // to_host fails unless on fake:0
  std::vector<Tensor> outputs;
  KernelContext host(ctx.node(), views, outputs, ctx.config());
  host.set_scope(ctx.scope());
  host.set_observer(ctx.observer());
  host.set_subgraphs(ctx.subgraphs());
  host.set_values(ctx.values());
  const auto start = std::chrono::steady_clock::now();
  kernel.compute(host);
  kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t o = 0; o < outputs.size(); ++o) ctx.outputs()[o] = to_device(outputs[o]);
}

void FakeBackend::store_in_format(Tensor& tensor, Format storage, double scale) const {
  Tensor host = to_host(tensor);
  host_backend().store_in_format(host, storage, scale);
  tensor = to_device(host);
}

Tensor FakeBackend::convert(const Tensor& tensor, Format storage, double scale) const {
  return to_device(host_backend().convert(to_host(tensor), storage, scale));
}

double FakeBackend::absmax(const Tensor& tensor) const { return host_backend().absmax(to_host(tensor)); }

namespace {

std::vector<double> values_of(const Tensor& host) {
  std::vector<double> out(static_cast<size_t>(host.numel()));
  probes::for_each_value(host, 0, host.numel(), [&](double x, int64_t i) { out[size_t(i)] = x; });
  return out;
}

}  // namespace

std::optional<ProbeChunks> FakeBackend::probe(const ProbeRequest& r) const {
  if (!probes_) return std::nullopt;
  const std::vector<double> reference = values_of(to_host(*r.reference));
  std::vector<std::vector<double>> runs;
  for (const Tensor* run : r.runs) runs.push_back(values_of(to_host(*run)));
  const int64_t n = static_cast<int64_t>(reference.size());
  const size_t chunks = static_cast<size_t>((n + r.chunk - 1) / r.chunk), fits = r.fits.size(), count = runs.size();
  ProbeChunks out;
  out.range.resize(r.reference_figures ? chunks : 0);
  out.hist.resize(out.range.size());
  out.fits.resize(chunks * fits);
  out.runs.resize(chunks * count);
  out.run_hists.resize(chunks * count);
  for (size_t c = 0; c < chunks; ++c)
    for (int64_t i = static_cast<int64_t>(c) * r.chunk; i < std::min(n, static_cast<int64_t>(c + 1) * r.chunk); ++i) {
      const double x = reference[size_t(i)];
      if (r.reference_figures) {
        out.range[c].add(x);
        out.hist[c].add(x);
      }
      for (size_t f = 0; f < fits; ++f) out.fits[c * fits + f].add(x, r.fits[f]);
      for (size_t j = 0; j < count; ++j) {
        out.runs[c * count + j].add(x, runs[j][size_t(i)], r.params);
        if (j < r.run_histograms.size() && r.run_histograms[j]) out.run_hists[c * count + j].add(runs[j][size_t(i)]);
      }
    }
  return out;
}

std::optional<double> FakeBackend::last_run_device_seconds() const { return kernel_seconds; }

FakeBackend::Counts FakeBackend::counts() const { return {uploads_, downloads_, runs_, live_buffers, overruns}; }

void FakeBackend::reset_counts() {
  uploads_ = 0;
  downloads_ = 0;
  runs_ = 0;
}

}  // namespace mpa::testing
