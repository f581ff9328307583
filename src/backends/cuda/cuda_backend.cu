#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cupti_timer.h"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/math_modes.h"
#include "backends/modules.h"
#include "tensor/dispatch.h"
#include "tensor/formats.h"

namespace mpa::cuda {

// [SECTION] Errors

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    fail(std::string("cuda: ") + what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(std::string("cuBLAS: ") + what + ": " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) +
         ")");
}

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) fail(std::string("cuDNN: ") + what + ": " + cudnnGetErrorString(status));
}

namespace {

thread_local const CudaBackend* running_backend = nullptr;
thread_local uint64_t last_cupti_tag = 0;  // the CUPTI tag of the node this thread last ran (0: not by CUPTI)

std::string version_string(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string((v % major_div) / minor_div);
}

// Whether the driver and a device are there; the reason in words when not. Asked once: with no driver
// installed cudart's first call reports cudaErrorInsufficientDriver, with no device cudaErrorNoDevice.
struct Presence {
  int count = 0;
  std::string reason;
};
const Presence& presence() {
  static const Presence p = [] {
    Presence found;
    // cudart reports a missing driver as an old one (cudaErrorInsufficientDriver): say which it is.
    if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); !driver) {
      const char* error = dlerror();
      found.reason = std::string("no NVIDIA driver (") + (error ? error : "libcuda.so.1 not found") + ")";
      return found;
    }
    const cudaError_t status = cudaGetDeviceCount(&found.count);
    if (status != cudaSuccess) {
      found.count = 0;
      found.reason =
          std::string("no usable CUDA device (") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")";
      cudaGetLastError();  // clear it, so later calls do not see it
    } else if (found.count == 0) {
      found.reason = "no CUDA device (cudaGetDeviceCount found none)";
    }
    return found;
  }();
  return p;
}

}  // namespace

const CudaBackend& running() {
  if (!running_backend) fail("cuda: a CUDA kernel ran outside CudaBackend::run");
  return *running_backend;
}

std::string versions_line() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  const size_t cudnn = cudnnGetVersion();  // 9.x.y as 90x0y
  return "driver " + version_string(driver, 1000, 10) + ", runtime " + version_string(runtime, 1000, 10) + ", cuBLAS " +
         std::to_string(cublas_major) + "." + std::to_string(cublas_minor) + "." + std::to_string(cublas_patch) +
         ", cuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string((cudnn % 10000) / 100) + "." +
         std::to_string(cudnn % 100);
}

// [SECTION] The backend

struct CudaBackend::State {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::byte* staging = nullptr;  // pinned host memory for small copies back (probe chunks)
  size_t staging_bytes = 0;
};

CudaBackend::CudaBackend(int index)
    : index_(index), name_("cuda:" + std::to_string(index)), free_blocks_(std::make_shared<FreeBlocks>()) {}

CudaBackend::~CudaBackend() = default;

Support CudaBackend::available() const {
  const Presence& p = presence();
  if (!p.reason.empty()) return {false, p.reason};
  if (index_ >= p.count)
    return {false, "no device " + name_ + " (this machine has " + std::to_string(p.count) + " CUDA device(s))"};
  return {};
}

std::string CudaBackend::describe() const {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, index_), "cudaGetDeviceProperties");
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " + memory +
         ", " + std::to_string(prop.multiProcessorCount) + " SMs), " + versions_line();
}

// The device this thread made current: every launch asks for its backend's stream, so setting the same
// device again on each would be a driver call per kernel.
thread_local int current_device = -1;

void CudaBackend::activate() const {
  if (current_device == index_) return;
  check(cudaSetDevice(index_), "cudaSetDevice");
  current_device = index_;
}

CudaBackend::State& CudaBackend::state() const {
  std::call_once(once_, [this] {
    const Support here = available();
    if (!here.ok) fail(name_ + ": " + here.reason);
    activate();
    auto made = std::make_unique<State>();
    check(cudaStreamCreateWithFlags(&made->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&made->start), "cudaEventCreate");
    check(cudaEventCreate(&made->stop), "cudaEventCreate");
    // Freed memory goes back to the pool, not to the driver: audits free and remake the same sizes node
    // after node (the CPU keeps freed tensor memory for the same reason).
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, index_), "cudaDeviceGetDefaultMemPool");
    uint64_t keep_all = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "cudaMemPoolSetAttribute");
    state_ = std::move(made);
  });
  activate();
  return *state_;
}

cudaStream_t CudaBackend::stream() const { return state().stream; }

cublasHandle_t CudaBackend::cublas() const {
  State& s = state();
  if (!s.cublas) {
    check(cublasCreate(&s.cublas), "cublasCreate");
    check(cublasSetStream(s.cublas, s.stream), "cublasSetStream");
    // Same inputs, same bits: no atomics-based split-K reductions.
    check(cublasSetAtomicsMode(s.cublas, CUBLAS_ATOMICS_NOT_ALLOWED), "cublasSetAtomicsMode");
  }
  return s.cublas;
}

cudnnHandle_t CudaBackend::cudnn() const {
  State& s = state();
  if (!s.cudnn) {
    check(cudnnCreate(&s.cudnn), "cudnnCreate");
    check(cudnnSetStream(s.cudnn, s.stream), "cudnnSetStream");
  }
  return s.cudnn;
}

// Freed device blocks kept by size for the next request of that size. An audit frees and remakes the same
// sizes node after node (thousands of blocks per sample) and a cudaMallocAsync/cudaFreeAsync pair costs
// about 7 us of host time on an H200, more than most of the kernels the blocks are for; a block taken from
// here was freed in stream order on the one stream every user of it runs on, so it is safe to reuse at
// once. Beyond kMaxKeptBytes blocks go back to the stream-ordered pool.
struct CudaBackend::FreeBlocks {
  static constexpr size_t kMaxKeptBytes = size_t(4) << 30;
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> by_size;
  size_t kept_bytes = 0;
};

std::shared_ptr<std::byte[]> CudaBackend::allocate(size_t bytes) const {
  cudaStream_t stream = this->stream();
  if (bytes == 0) return std::shared_ptr<std::byte[]>(nullptr, [](std::byte*) {});
  bytes = (bytes + 255) / 256 * 256;  // the pool's granularity: sizes that differ by less share blocks
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(free_blocks_->mutex);
    if (auto it = free_blocks_->by_size.find(bytes); it != free_blocks_->by_size.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      free_blocks_->kept_bytes -= bytes;
    }
  }
  if (!p) {
    cudaError_t status = cudaMallocAsync(&p, bytes, stream);
    if (status == cudaErrorMemoryAllocation) {  // the kept blocks go back to the pool first
      cudaGetLastError();
      std::lock_guard<std::mutex> lock(free_blocks_->mutex);
      for (auto& [size, blocks] : free_blocks_->by_size)
        for (void* q : blocks) cudaFreeAsync(q, stream);
      free_blocks_->by_size.clear();
      free_blocks_->kept_bytes = 0;
      status = cudaMallocAsync(&p, bytes, stream);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      fail(name_ + ": out of device memory allocating " + std::to_string(bytes) + " bytes");
    }
    check(status, "cudaMallocAsync");
  }
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), [blocks = free_blocks_, stream, bytes](std::byte* q) {
    {
      std::lock_guard<std::mutex> lock(blocks->mutex);
      if (blocks->kept_bytes + bytes <= FreeBlocks::kMaxKeptBytes) {
        blocks->by_size[bytes].push_back(q);
        blocks->kept_bytes += bytes;
        return;
      }
    }
    cudaFreeAsync(q, stream);  // errors ignored: at process exit the runtime may already be gone
  });
}

Tensor CudaBackend::empty(DType dtype, Shape shape) const {
  if (dtype == DType::String) fail(name_ + ": string tensors do not go to a CUDA device");
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor::on_device(dtype, std::move(shape), device(), allocate(bytes));
}

Tensor CudaBackend::upload(const Tensor& host) const {
  if (!host.defined()) return host;
  Tensor on_device = empty(host.dtype(), host.shape());
  // From pageable memory the copy has read the host bytes when the call returns.
  if (host.nbytes() > 0)
    check(cudaMemcpyAsync(on_device.device_raw(device()), host.raw(), host.nbytes(), cudaMemcpyHostToDevice, stream()),
          "upload");
  return on_device;
}

Tensor CudaBackend::download(const Tensor& on_device) const {
  if (!on_device.defined()) return on_device;
  Tensor host(on_device.dtype(), on_device.shape());
  if (host.nbytes() > 0) {
    check(cudaMemcpyAsync(host.raw(), on_device.device_raw(device()), host.nbytes(), cudaMemcpyDeviceToHost, stream()),
          "download");
    check(cudaStreamSynchronize(stream()), "download");
  }
  return host;
}

std::byte* CudaBackend::staging(size_t bytes) const {
  State& s = state();
  if (bytes > s.staging_bytes) {
    synchronize();  // no copy into the old buffer is still under way
    if (s.staging) check(cudaFreeHost(s.staging), "cudaFreeHost");
    s.staging = nullptr;
    s.staging_bytes = 0;
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "cudaMallocHost");
    s.staging = static_cast<std::byte*>(p);
    s.staging_bytes = bytes;
  }
  return s.staging;
}

void CudaBackend::synchronize() const {
  if (state_) check(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
}

void CudaBackend::run(const OpKernel& kernel, KernelContext& ctx) const {
  State& s = state();
  running_backend = this;
  // Timed runs: the node's kernels by CUPTI where it can be used, else CUDA events around its launches.
  const bool timed = time_nodes_;
  CuptiTimer* cupti = timed ? CuptiTimer::start() : nullptr;
  last_cupti_tag = cupti ? cupti->begin() : 0;
  if (timed) check(cudaEventRecord(s.start, s.stream), "cudaEventRecord");
  try {
    kernel.compute(ctx);
  } catch (...) {
    if (cupti) cupti->end();
    throw;
  }
  if (timed) check(cudaEventRecord(s.stop, s.stream), "cudaEventRecord");
  if (cupti) cupti->end();
  if (const cudaError_t launch = cudaGetLastError(); launch != cudaSuccess)  // the label only when it is needed
    check(launch, ctx.node().label().c_str());
}

std::optional<double> CudaBackend::last_run_device_seconds() const {
  if (!state_ || !time_nodes_) return std::nullopt;  // the events are recorded only when timing
  check(cudaEventSynchronize(state_->stop), "cudaEventSynchronize");
  if (last_cupti_tag) return CuptiTimer::start()->seconds(last_cupti_tag);
  float ms = 0;
  check(cudaEventElapsedTime(&ms, state_->start, state_->stop), "cudaEventElapsedTime");
  return ms / 1e3;
}

namespace {

bool output_named(const Node& node, size_t i) { return i < node.outputs.size() && !node.outputs[i].empty(); }

// What a registered CUDA kernel does not cover, told from the node alone (no shapes): "" when it runs.
std::string declined(const Node& node, const ExecConfig& config) {
  const std::string& op = node.op_type;
  if (traits_of(node).sums_in == SumsIn::GemmSetting) {  // GEMM-like: MatMul, Gemm, Conv, ConvTranspose, RNNs
    if (std::string why = gemm_unsupported(config); !why.empty()) return why;
  }
  if (op == "MaxPool" && output_named(node, 1)) return "the Indices output runs on the CPU";
  // The device kernels know no narrow type (tensor/dtype.h): the CPU converts to them.
  if (const Attribute* to = node.attribute("to"); op == "Cast" && to && to->kind == Attribute::Kind::Int &&
                                                  dtype_is_narrow(static_cast<DType>(to->i)))
    return "casts to " + dtype_name(static_cast<DType>(to->i)) + " run on the CPU";
  if (op == "BatchNormalization" &&
      (output_named(node, 1) || (node.attribute("training_mode") && node.attribute("training_mode")->i)))
    return "training mode runs on the CPU";
  if (op == "LayerNormalization" && (output_named(node, 1) || output_named(node, 2)))
    return "the statistics outputs run on the CPU";
  if ((op == "LSTM" || op == "GRU" || op == "RNN") && node.inputs.size() > 4 && !node.inputs[4].empty())
    return "sequence_lens runs on the CPU (its lengths are read on the host)";
  return {};
}

}  // namespace

Support CudaBackend::supports(const Node& node, int64_t opset, const ExecConfig& config) const {
  if (config.profile == RuntimeProfile::OrtCuda)
    return {false, "the ort-cuda profile's op rules are emulated on the CPU only"};
  if (config.storage == Format::FP64) return {false, "the fp64 reference runs on the CPU"};
  const OpRegistry& registry = OpRegistry::instance();
  if (traits_of(node).shape_only) return {};
  if (!registry.find(kernel_table(), node.domain, node.op_type, opset))
    return {false, registry.why_unsupported(kernel_table(), node.domain, node.op_type, opset)};
  if (std::string why = declined(node, config); !why.empty()) return {false, why};
  return {};
}

std::vector<std::pair<std::string, std::string>> CudaBackend::numerics(const ExecConfig& config) const {
  const std::string gemm_note = gemm_unsupported(config);
  return {
      {"gemm", gemm_note.empty() ? "cuBLAS, " + gemm_math_name(gemm_math(config, DType::Float32)) + ", no atomics"
                                 : "on the CPU: " + gemm_note},
      {"conv",
       "cuDNN, " + conv_math_name(conv_math(config, DType::Float32)) +
           ", bias blended in before the one rounding; algorithm: cuDNN's heuristic ranking (never timed), first "
           "deterministic one of the math mode, kept per shape"},
      {"elementwise",
       "the CPU's functors (src/kernels), IEEE division and square root, no FMA contraction, device libm"},
      {"rows and reductions",
       "one thread per row or output in the CPU's element order (softmax, normalisations, "
       "pools); Reduce* in row-major order"},
      {"storage", "float32 values on the format's grid, rounded on the device as on the CPU"},
      {"node time", !time_nodes_          ? "not recorded (no --timing)"
                    : CuptiTimer::start() ? "CUPTI kernel activity: the sum of the node's kernels"
                                          : "CUDA events around the node's launches (" + CuptiTimer::why_not() + ")"},
  };
}

// [SECTION] Format storage

namespace {

// double -> float rounded to odd (as tensor/format_storage.cpp): truncated, last bit set when inexact.
__device__ float round_to_odd_float(double d) {
  const float f = __double2float_rz(d);
  if (static_cast<double>(f) == d || isnan(d)) return static_cast<float>(d);
  return __uint_as_float(__float_as_uint(f) | 1u);
}

__device__ float round_scaled(Format format, float x, float scale) {
  return scale == 1.f ? round_to_format(format, x) : round_to_format(format, x / scale) * scale;
}

}  // namespace

// The CPU's rules (backends/cpu/format_rounding.cpp), element for element: float32 rounded onto the
// format's grid (a copy where others share the storage), float64 narrowed through float rounded to odd,
// other types as they are.
Tensor CudaBackend::convert(const Tensor& tensor, Format storage, double scale) const {
  if (!tensor.defined()) return tensor;
  running_backend = this;
  const float s = static_cast<float>(scale);
  const int64_t n = tensor.numel();
  if (storage == Format::FP64) {
    if (tensor.dtype() != DType::Float32) return tensor;
    Tensor out = empty(DType::Float64, tensor.shape());
    const float* in = device_data<float>(tensor);
    double* o = device_data<double>(out);
    for_each_index(n, [=] __device__(int64_t i) { o[i] = in[i]; });
    return out;
  }
  if (tensor.dtype() == DType::Float64) {
    Tensor out = empty(DType::Float32, tensor.shape());
    const double* in = device_data<double>(tensor);
    float* o = device_data<float>(out);
    const bool odd = s == 1.f && storage != Format::FP32;
    for_each_index(n, [=] __device__(int64_t i) {
      o[i] = odd ? round_to_format(storage, round_to_odd_float(in[i])) : round_scaled(storage, float(in[i]), s);
    });
    return out;
  }
  if (tensor.dtype() != DType::Float32 || storage == Format::FP32) return tensor;
  Tensor out = empty(DType::Float32, tensor.shape());
  const float* in = device_data<float>(tensor);
  float* o = device_data<float>(out);
  for_each_index(n, [=] __device__(int64_t i) { o[i] = round_scaled(storage, in[i], s); });
  return out;
}

void CudaBackend::store_in_format(Tensor& tensor, Format storage, double scale) const {
  if (storage == Format::FP64 || tensor.dtype() == DType::Float64 || tensor.storage_shared())
    return void(tensor = convert(tensor, storage, scale));
  if (tensor.dtype() != DType::Float32 || storage == Format::FP32) return;
  running_backend = this;
  float* data = device_data<float>(tensor);
  const float s = static_cast<float>(scale);
  for_each_index(tensor.numel(), [=] __device__(int64_t i) { data[i] = round_scaled(storage, data[i], s); });
}

namespace {

// Per part, the largest finite |x| of the elements part, part + parts, ...
template <class T>
void partial_absmax(const T* x, int64_t n, double* partial, int64_t parts) {
  for_each_index(parts, [=] __device__(int64_t part) {
    double m = 0;
    for (int64_t i = part; i < n; i += parts) {
      const double a = fabs(static_cast<double>(load(x[i])));
      if (isfinite(a)) m = fmax(m, a);
    }
    partial[part] = m;
  });
}

}  // namespace

double CudaBackend::absmax(const Tensor& tensor) const {
  if (!dtype_is_float(tensor.dtype()) || tensor.numel() == 0) return 0;
  running_backend = this;
  // One partial maximum per thread, then the host's: a maximum does not depend on the order.
  const int64_t n = tensor.numel();
  const int64_t parts = std::min<int64_t>(n, kThreads * kMaxBlocks);
  std::shared_ptr<std::byte[]> partial = allocate(static_cast<size_t>(parts) * sizeof(double));
  double* p = reinterpret_cast<double*>(partial.get());
  visit_float(tensor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    partial_absmax(device_data<T>(tensor), n, p, parts);
  });
  std::vector<double> host(static_cast<size_t>(parts));
  check(cudaMemcpyAsync(host.data(), p, host.size() * sizeof(double), cudaMemcpyDeviceToHost, stream()), "absmax");
  check(cudaStreamSynchronize(stream()), "absmax");
  return *std::max_element(host.begin(), host.end());
}

BroadcastIndex broadcast_index(const Shape& out, const std::vector<Shape>& inputs) {
  if (out.size() > static_cast<size_t>(kMaxRank))
    fail("cuda: rank " + std::to_string(out.size()) + " is beyond the CUDA kernels' " + std::to_string(kMaxRank));
  BroadcastIndex index;
  index.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) index.dims[d] = std::max<int64_t>(out[d], 1);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Shape& in = inputs[k];
    int64_t stride = 1;
    for (size_t j = in.size(); j-- > 0;) {
      const size_t d = out.size() - in.size() + j;
      index.strides[k][d] = in[j] == 1 ? 0 : stride;
      stride *= in[j];
    }
  }
  return index;
}

}  // namespace mpa::cuda

// [SECTION] Module entry points (backends/modules.h)

extern "C" __attribute__((visibility("default"))) int mpa_backend_api_version() { return mpa::kBackendApiVersion; }

extern "C" __attribute__((visibility("default"))) const char* mpa_backend_build() {
  static const std::string id = mpa::backend_build_id();
  return id.c_str();
}

extern "C" __attribute__((visibility("default"))) void mpa_backend_register() {
  static std::vector<std::unique_ptr<mpa::cuda::CudaBackend>> made;  // never destroyed before exit
  const int count = std::max(1, mpa::cuda::presence().count);        // cuda:0 stands, unavailable, when none
  for (int i = 0; i < count; ++i) {
    made.push_back(std::make_unique<mpa::cuda::CudaBackend>(i));
    mpa::add_backend(*made.back());
  }
}
