// The CUDA backend (../shared/docs/backends.md §7), built as the module libmpaudit_backend_cuda.so that
// mpaudit loads at run time (backends/modules.h). One backend per device ("cuda:0", ...), each with one
// stream on which every kernel, library call and transfer is ordered, a stream-ordered memory pool, and
// cuBLAS and cuDNN handles made on first use.
//
// Values are held as the emulator holds them: a tensor "in fp16" is float32 on the fp16 grid, so every
// op reads the same representation on both backends and the probes compare like with like (the memory
// cost: 4 bytes per fp16/bf16/fp8 value instead of 2 or 1). GEMMs and convolutions take their operands in
// the real format: converted to __half / __nv_bfloat16 in scratch memory just before the library call
// (exact, since the values are on the grid), with the compute type the precision settings name
// (cuda_math.h).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backends/backend.h"

namespace mpa::cuda {

// Fail (mpa::Error) naming the call and the library's own words for its status.
void check(cudaError_t status, const char* what);
void check(cublasStatus_t status, const char* what);
void check(cudnnStatus_t status, const char* what);

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int index);
  ~CudaBackend() override;
  std::string_view name() const override { return name_; }
  std::string_view kernel_table() const override { return "cuda"; }
  Device device() const override { return {Device::Kind::Cuda, index_}; }
  Support available() const override;
  std::string describe() const override;
  Support supports(const Node& node, int64_t opset, const ExecConfig& config) const override;
  void run(const OpKernel& kernel, KernelContext& ctx) const override;
  void synchronize() const override;
  std::optional<double> last_run_device_seconds() const override;
  void time_nodes(bool on) const override { time_nodes_ = on; }
  Tensor upload(const Tensor& host) const override;
  Tensor download(const Tensor& on_device) const override;
  void store_in_format(Tensor& tensor, Format storage, double scale) const override;
  Tensor convert(const Tensor& tensor, Format storage, double scale) const override;
  double absmax(const Tensor& tensor) const override;
  bool computes_probes() const override { return true; }
  std::optional<ProbeChunks> probe(const ProbeRequest& request) const override;  // backends/cuda/probes.cu
  std::vector<std::pair<std::string, std::string>> numerics(const ExecConfig& config) const override;

  // For kernels: an uninitialised tensor on this device, raw device memory freed with its last user (both
  // stream-ordered), the stream and the library handles (made on first use, on this device).
  Tensor empty(DType dtype, Shape shape) const;
  std::shared_ptr<std::byte[]> allocate(size_t bytes) const;
  cudaStream_t stream() const;
  // Pinned host memory of at least `bytes`, grown on demand, for copies back that the host waits for: one
  // copy from pinned memory instead of several from pageable memory, each of which waits on its own. Its
  // contents last until the next call.
  std::byte* staging(size_t bytes) const;
  cublasHandle_t cublas() const;
  cudnnHandle_t cudnn() const;
  // Makes this device current on the calling thread (every entry point does).
  void activate() const;

 private:
  struct State;
  State& state() const;  // the stream, handles and events, made on first use
  int index_;
  std::string name_;
  struct FreeBlocks;
  // Shared with the deleters of the blocks handed out, which may outlive the backend at exit.
  std::shared_ptr<FreeBlocks> free_blocks_;
  mutable std::atomic<bool> time_nodes_{false};
  mutable std::once_flag once_;
  mutable std::unique_ptr<State> state_;
};

// The backend running the node this thread is running (set by CudaBackend::run): kernels find their
// stream, handles and allocator here.
const CudaBackend& running();

// A device tensor's elements, typed (fails for a tensor on another device).
template <class T>
const T* device_data(const Tensor& t) {
  return static_cast<const T*>(t.device_raw(running().device()));
}
template <class T>
T* device_data(Tensor& t) {
  return static_cast<T*>(t.device_raw(running().device()));
}

// The cuBLAS and cuDNN library versions and the driver/runtime versions, "13.0" style.
std::string versions_line();

}  // namespace mpa::cuda
