// Device side of gpu_reference.h. Each function copies its inputs in, runs one grid-stride kernel or one
// cuBLAS call, and copies the result out; errors throw std::runtime_error naming the CUDA call.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "gpu_reference.h"
#include "kernels/unary.h"

namespace mpa::gpu {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(status)));
}

// Owns one device allocation.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) { check(cudaMalloc(&data_, count * sizeof(T)), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() { return data_; }
  void upload(const std::vector<T>& host) {
    check(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    check(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return host;
  }

 private:
  T* data_ = nullptr;
  size_t count_;
};

constexpr int kBlock = 256;
int grid_for(size_t n) { return static_cast<int>(std::min<size_t>((n + kBlock - 1) / kBlock, 65535u * 16u)); }
void finish(const char* kernel) {
  check(cudaGetLastError(), kernel);
  check(cudaDeviceSynchronize(), kernel);
}

__device__ float native_round(Format format, float x) {
  switch (format) {
    case Format::FP16: return __half2float(__float2half_rn(x));
    case Format::BF16: return __bfloat162float(__float2bfloat16_rn(x));
    case Format::FP8E4M3FN:
      return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3), __NV_E4M3)));
    case Format::FP8E5M2:
      return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2), __NV_E5M2)));
    default: return x;
  }
}

__global__ void round_kernel(Format format, bool native, uint32_t first, uint32_t count, float* out) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(blockDim.x) * gridDim.x) {
    const float x = __uint_as_float(first + static_cast<uint32_t>(i));
    out[i] = native ? native_round(format, x) : round_to_format(format, x);
  }
}

__global__ void decode_fp8_kernel(Format format, float* out) {
  const unsigned code = threadIdx.x;
  const __nv_fp8_interpretation_t kind = format == Format::FP8E4M3FN ? __NV_E4M3 : __NV_E5M2;
  out[code] = __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), kind)));
}

__global__ void half_binary_kernel(HalfOp op, uint32_t first_a, uint32_t count_a, uint16_t* out) {
  const size_t n = size_t(count_a) << 16;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    const __half a = __ushort_as_half(static_cast<unsigned short>(first_a + (i >> 16)));
    const __half b = __ushort_as_half(static_cast<unsigned short>(i & 0xFFFF));
    const __half r = op == HalfOp::Add ? __hadd(a, b) : op == HalfOp::Mul ? __hmul(a, b) : __hdiv(a, b);
    out[i] = __half_as_ushort(r);
  }
}

template <class F>
__global__ void unary_kernel(float* out) {
  const unsigned code = blockIdx.x * blockDim.x + threadIdx.x;
  if (code < 65536u) out[code] = round_to_format(Format::FP16, F{}(half_to_float(static_cast<uint16_t>(code))));
}

}  // namespace

std::string device_description() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return {};
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return {};
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

std::vector<float> round_bit_range(Format format, uint32_t first_bits, uint32_t count, bool native) {
  DeviceBuffer<float> out(count);
  round_kernel<<<grid_for(count), kBlock>>>(format, native, first_bits, count, out.get());
  finish("round_kernel");
  return out.download();
}

std::vector<float> decode_all_fp8(Format format) {
  DeviceBuffer<float> out(256);
  decode_fp8_kernel<<<1, 256>>>(format, out.get());
  finish("decode_fp8_kernel");
  return out.download();
}

std::vector<uint16_t> half_binary(HalfOp op, uint32_t first_a, uint32_t count_a) {
  const size_t n = size_t(count_a) << 16;
  DeviceBuffer<uint16_t> out(n);
  half_binary_kernel<<<grid_for(n), kBlock>>>(op, first_a, count_a, out.get());
  finish("half_binary_kernel");
  return out.download();
}

std::vector<std::string> unary_functor_names() {
  std::vector<std::string> names;
#define MPA_NAME(F) names.push_back(#F);
  MPA_UNARY_FLOAT_FUNCTORS(MPA_NAME)
#undef MPA_NAME
  return names;
}

std::vector<float> unary_on_all_halves(const std::string& name) {
  DeviceBuffer<float> out(65536);
#define MPA_LAUNCH(F)                                   \
  if (name == #F) {                                     \
    unary_kernel<F><<<65536 / kBlock, kBlock>>>(out.get()); \
    finish(#F);                                         \
    return out.download();                              \
  }
  MPA_UNARY_FLOAT_FUNCTORS(MPA_LAUNCH)
#undef MPA_LAUNCH
  return {};
}

std::vector<float> gemm(GemmKind kind, int M, int N, int K, const std::vector<float>& a, const std::vector<float>& b) {
  const bool tf32 = kind == GemmKind::Tf32;
  const bool bf16 = kind == GemmKind::Bf16Accumulate32;
  const cudaDataType_t type = tf32 ? CUDA_R_32F : bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const cublasComputeType_t compute = tf32                                 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : kind == GemmKind::Fp16Accumulate16 ? CUBLAS_COMPUTE_16F
                                                                           : CUBLAS_COMPUTE_32F;
  // Operands travel as 16-bit codes (exact: the values are on the grid) or as the floats themselves.
  auto encode = [&](const std::vector<float>& v) {
    std::vector<uint16_t> codes(v.size());
    for (size_t i = 0; i < v.size(); ++i) codes[i] = bf16 ? float_to_bfloat16(v[i]) : float_to_half(v[i]);
    return codes;
  };
  const size_t element = tf32 ? 4 : 2;
  DeviceBuffer<uint8_t> da(a.size() * element), db(b.size() * element), dc(size_t(M) * N * element);
  if (tf32) {
    check(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy A");
    check(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy B");
  } else {
    const auto ca = encode(a), cb = encode(b);
    check(cudaMemcpy(da.get(), ca.data(), ca.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy A");
    check(cudaMemcpy(db.get(), cb.data(), cb.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy B");
  }
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");
  const float alpha32 = 1.f, beta32 = 0.f;
  const __half alpha16 = __float2half(1.f), beta16 = __float2half(0.f);
  const bool half_scalars = compute == CUBLAS_COMPUTE_16F;
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: swap the operands, no transposes.
  const cublasStatus_t status =
      cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, half_scalars ? static_cast<const void*>(&alpha16) : &alpha32,
                   db.get(), type, N, da.get(), type, K, half_scalars ? static_cast<const void*>(&beta16) : &beta32,
                   dc.get(), type, N, compute, CUBLAS_GEMM_DEFAULT);
  cublasDestroy(handle);
  check(status, "cublasGemmEx");
  finish("cublasGemmEx");
  const std::vector<uint8_t> raw = dc.download();
  std::vector<float> c(size_t(M) * N);
  for (size_t i = 0; i < c.size(); ++i) {
    if (tf32) {
      std::memcpy(&c[i], &raw[i * 4], 4);
    } else {
      uint16_t code;
      std::memcpy(&code, &raw[i * 2], 2);
      c[i] = bf16 ? bfloat16_to_float(code) : half_to_float(code);
    }
  }
  return c;
}

}  // namespace mpa::gpu
