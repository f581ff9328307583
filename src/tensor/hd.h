// MPA_HD marks functions that are compiled for both the host and CUDA devices: the number formats here and
// the kernel functors under src/kernels/, which must stay device-clean: no exceptions, no std:: containers,
// no host-only library calls.
#pragma once
#if defined(__CUDACC__)
#define MPA_HD __host__ __device__ inline
#else
#define MPA_HD inline
#endif
