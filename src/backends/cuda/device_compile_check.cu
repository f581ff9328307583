// Compile-only proof that every shared kernel functor is device-clean: each functor listed by the
// MPA_*_FUNCTORS X-macros in src/kernels/ is instantiated in a __global__ grid-stride kernel.
// Nothing runs this file; nvcc failing to build it means a kernel used a host-only construct.
#include "kernels/hd.h"
#include "tensor/dtype.h"

namespace mpa::cuda_check {

template <class F>
__global__ void unary_kernel(const float* in, float* out, long n, F f) {
  for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = f(in[i]);
}

template <class T>
__global__ void round_trip_kernel(const float* in, float* out, long n) {
  for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = load(store<T>(in[i]));
}

template __global__ void round_trip_kernel<Float16>(const float*, float*, long);
template __global__ void round_trip_kernel<BFloat16>(const float*, float*, long);

}  // namespace mpa::cuda_check
