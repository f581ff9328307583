// Compile-only proof that every shared kernel functor is device-clean: each functor listed by the
// MPA_*_FUNCTORS X-macros in src/kernels/ is instantiated in a __global__ grid-stride kernel, wrapped in
// Stored<> exactly as the backends run it (load -> compute type -> store), for every storage type the
// list stands for. Nothing runs this file; nvcc failing to build it means a kernel used a host-only
// construct.
//
// To check a new functor list: include its header and add one MPA_CHECK_* line in the [SECTION] Lists
// below (add a kernel shape in [SECTION] Kernels if none fits).
#include <cstdint>

#include "kernels/binary.h"
#include "kernels/cast.h"
#include "tensor/hd.h"
#include "kernels/normalize.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"
#include "kernels/stored.h"
#include "kernels/unary.h"
#include "tensor/dtype.h"
#include "tensor/formats.h"

namespace mpa::cuda_check {

// [SECTION] Kernels

template <class In, class Out, class F>
__global__ void map_kernel(const In* in, Out* out, long n, F f) {
  for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = f(in[i]);
}

template <class A, class B, class Out, class F>
__global__ void map2_kernel(const A* a, const B* b, Out* out, long n, F f) {
  for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = f(a[i], b[i]);
}

template <class A, class B, class C, class Out, class F>
__global__ void map3_kernel(const A* a, const B* b, const C* c, Out* out, long n, F f) {
  for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = f(a[i], b[i], c[i]);
}

template <class T>
__global__ void round_trip_kernel(const float* in, float* out, long n) {
  for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = load(store<T>(in[i]));
}

// One thread per set of n contiguous elements (reductions, scans) or per row (softmax, normalisations).
template <class T, template <class> class F>
__global__ void reduce_kernel(const T* in, T* out, long sets, long n) {
  const F<T> f{};
  for (long s = blockIdx.x * blockDim.x + threadIdx.x; s < sets; s += blockDim.x * gridDim.x) {
    typename F<T>::Acc a = f.init();
    for (long i = 0; i < n; ++i) a = f.step(a, in[s * n + i]);
    out[s] = f.finalize(f.merge(a, f.init()), n);
  }
}

template <class T>
__global__ void row_misc_kernel(const T* in, T* out, int64_t* index, compute_t<T>* stat, long rows, long n) {
  const MomentsF<T> moments{};
  for (long r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += blockDim.x * gridDim.x) {
    typename MomentsF<T>::Acc a = moments.init();
    for (long i = 0; i < n; ++i) a = moments.step(a, in[r * n + i]);
    a = moments.merge(a, moments.init());
    stat[r] = static_cast<compute_t<T>>(moments.mean(a) + moments.variance(a));
    index[r] = arg_reduce_row<true>(in + r * n, n, 1, ArgBetter<true>{}) + arg_reduce_row<false>(in + r * n, n, 1, ArgBetter<false>{true});
    scan_row(ReduceProdF<T>{}, in + r * n, out + r * n, n, 1, true, true);
  }
}

template <class T, class Row>
__global__ void softmax_row_kernel(const T* in, T* out, long rows, long n, Row row) {
  for (long r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += blockDim.x * gridDim.x)
    row(in + r * n, out + r * n, n, 1, nullptr);
}

template <class T, class Stats>
__global__ void normalize_row_kernel(const T* in, T* out, long rows, long n, const compute_t<T>* scale,
                                     const compute_t<T>* bias, Stats stats) {
  for (long r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += blockDim.x * gridDim.x) {
    const RowStats<compute_t<T>> st = stats(in + r * n, n, compute_t<T>(1e-5));
    NormalizeAffineRow{}(in + r * n, out + r * n, n, st, scale, 1, bias, 1);
    LpNormalizeRow{}(out + r * n, out + r * n, n, 1, 2);
  }
}

// Number formats: round_to_format reaches every scalar encoder and decoder (FP16, BF16, FP8, TF32).
__global__ void round_to_format_kernel(const float* in, float* out, long n, Format format, bool fp8_saturate) {
  for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = round_to_format(format, in[i], fp8_saturate);
}

// [SECTION] Instantiation helpers: one storage type T, one functor F

#define MPA_CHECK_UNARY_AS(T, Out, F) \
  template __global__ void map_kernel<T, Out, Stored<Out, F>>(const T*, Out*, long, Stored<Out, F>);
#define MPA_CHECK_BINARY_AS(T, Out, F) \
  template __global__ void map2_kernel<T, T, Out, Stored<Out, F>>(const T*, const T*, Out*, long, Stored<Out, F>);

#define MPA_CHECK_UNARY_FLOAT(F) \
  MPA_CHECK_UNARY_AS(float, float, F) MPA_CHECK_UNARY_AS(double, double, F) \
  MPA_CHECK_UNARY_AS(Float16, Float16, F) MPA_CHECK_UNARY_AS(BFloat16, BFloat16, F)
#define MPA_CHECK_UNARY_SIGNED(F) MPA_CHECK_UNARY_FLOAT(F) \
  MPA_CHECK_UNARY_AS(int8_t, int8_t, F) MPA_CHECK_UNARY_AS(int32_t, int32_t, F) MPA_CHECK_UNARY_AS(int64_t, int64_t, F)
#define MPA_CHECK_UNARY_NUMERIC(F) MPA_CHECK_UNARY_SIGNED(F) \
  MPA_CHECK_UNARY_AS(uint8_t, uint8_t, F) MPA_CHECK_UNARY_AS(uint16_t, uint16_t, F) MPA_CHECK_UNARY_AS(uint64_t, uint64_t, F)
#define MPA_CHECK_UNARY_PREDICATE(F) \
  MPA_CHECK_UNARY_AS(float, bool, F) MPA_CHECK_UNARY_AS(double, bool, F) MPA_CHECK_UNARY_AS(Float16, bool, F)
#define MPA_CHECK_UNARY_INTEGER(F) \
  MPA_CHECK_UNARY_AS(int8_t, int8_t, F) MPA_CHECK_UNARY_AS(uint16_t, uint16_t, F) MPA_CHECK_UNARY_AS(int64_t, int64_t, F)
#define MPA_CHECK_UNARY_BOOL(F) MPA_CHECK_UNARY_AS(bool, bool, F)

#define MPA_CHECK_BINARY_NUMERIC(F) \
  MPA_CHECK_BINARY_AS(float, float, F) MPA_CHECK_BINARY_AS(double, double, F) MPA_CHECK_BINARY_AS(Float16, Float16, F) \
  MPA_CHECK_BINARY_AS(BFloat16, BFloat16, F) MPA_CHECK_BINARY_AS(int8_t, int8_t, F) MPA_CHECK_BINARY_AS(int32_t, int32_t, F) \
  MPA_CHECK_BINARY_AS(int64_t, int64_t, F) MPA_CHECK_BINARY_AS(uint16_t, uint16_t, F) MPA_CHECK_BINARY_AS(uint64_t, uint64_t, F)
#define MPA_CHECK_BINARY_COMPARE(F) \
  MPA_CHECK_BINARY_AS(float, bool, F) MPA_CHECK_BINARY_AS(Float16, bool, F) MPA_CHECK_BINARY_AS(int64_t, bool, F) \
  MPA_CHECK_BINARY_AS(bool, bool, F)
#define MPA_CHECK_BINARY_INTEGER(F) \
  MPA_CHECK_BINARY_AS(uint8_t, uint8_t, F) MPA_CHECK_BINARY_AS(uint32_t, uint32_t, F) MPA_CHECK_BINARY_AS(uint64_t, uint64_t, F) \
  MPA_CHECK_BINARY_AS(int16_t, int16_t, F)
#define MPA_CHECK_BINARY_BOOL(F) MPA_CHECK_BINARY_AS(bool, bool, F)

#define MPA_CHECK_REDUCE_AS(T, F) template __global__ void reduce_kernel<T, F>(const T*, T*, long, long);
#define MPA_CHECK_REDUCE(F) \
  MPA_CHECK_REDUCE_AS(float, F) MPA_CHECK_REDUCE_AS(double, F) MPA_CHECK_REDUCE_AS(Float16, F) \
  MPA_CHECK_REDUCE_AS(BFloat16, F) MPA_CHECK_REDUCE_AS(int8_t, F) MPA_CHECK_REDUCE_AS(int32_t, F) \
  MPA_CHECK_REDUCE_AS(int64_t, F) MPA_CHECK_REDUCE_AS(uint32_t, F) MPA_CHECK_REDUCE_AS(uint64_t, F)
#define MPA_CHECK_ROW_AS(T) \
  template __global__ void row_misc_kernel<T>(const T*, T*, int64_t*, compute_t<T>*, long, long);
#define MPA_CHECK_SOFTMAX_ROW_AS(T, F) template __global__ void softmax_row_kernel<T, F>(const T*, T*, long, long, F);
#define MPA_CHECK_SOFTMAX_ROW(F) \
  MPA_CHECK_SOFTMAX_ROW_AS(float, F) MPA_CHECK_SOFTMAX_ROW_AS(double, F) MPA_CHECK_SOFTMAX_ROW_AS(Float16, F) \
  MPA_CHECK_SOFTMAX_ROW_AS(BFloat16, F)
#define MPA_CHECK_NORMALIZE_ROW_AS(T, F) \
  template __global__ void normalize_row_kernel<T, F>(const T*, T*, long, long, const compute_t<T>*, \
                                                      const compute_t<T>*, F);
#define MPA_CHECK_NORMALIZE_ROW(F) \
  MPA_CHECK_NORMALIZE_ROW_AS(float, F) MPA_CHECK_NORMALIZE_ROW_AS(double, F) MPA_CHECK_NORMALIZE_ROW_AS(Float16, F) \
  MPA_CHECK_NORMALIZE_ROW_AS(BFloat16, F)

// [SECTION] Lists

MPA_UNARY_FLOAT_FUNCTORS(MPA_CHECK_UNARY_FLOAT)
MPA_UNARY_SIGNED_FUNCTORS(MPA_CHECK_UNARY_SIGNED)
MPA_UNARY_NUMERIC_FUNCTORS(MPA_CHECK_UNARY_NUMERIC)
MPA_UNARY_PREDICATE_FUNCTORS(MPA_CHECK_UNARY_PREDICATE)
MPA_UNARY_INTEGER_FUNCTORS(MPA_CHECK_UNARY_INTEGER)
MPA_UNARY_BOOL_FUNCTORS(MPA_CHECK_UNARY_BOOL)
MPA_BINARY_NUMERIC_FUNCTORS(MPA_CHECK_BINARY_NUMERIC)
MPA_BINARY_COMPARE_FUNCTORS(MPA_CHECK_BINARY_COMPARE)
MPA_BINARY_INTEGER_FUNCTORS(MPA_CHECK_BINARY_INTEGER)
MPA_BINARY_BOOL_FUNCTORS(MPA_CHECK_BINARY_BOOL)
MPA_REDUCE_FUNCTORS(MPA_CHECK_REDUCE)
MPA_SOFTMAX_ROW_FUNCTORS(MPA_CHECK_SOFTMAX_ROW)
MPA_NORMALIZE_STATS_FUNCTORS(MPA_CHECK_NORMALIZE_ROW)
MPA_CHECK_REDUCE_AS(bool, ReduceMaxF)
MPA_CHECK_REDUCE_AS(bool, ReduceMinF)
MPA_CHECK_ROW_AS(float)
MPA_CHECK_ROW_AS(double)
MPA_CHECK_ROW_AS(Float16)
MPA_CHECK_ROW_AS(BFloat16)
MPA_CHECK_ROW_AS(int32_t)
MPA_CHECK_ROW_AS(uint64_t)

// Functors outside the lists: templated on the type (Clip), mixed operand types (Pow), storage-type
// functors (Where, Cast: every pair of stored types is covered by the same template).
MPA_CHECK_UNARY_AS(float, float, ClipF<float>)
MPA_CHECK_UNARY_AS(Float16, Float16, ClipF<float>)
MPA_CHECK_UNARY_AS(int32_t, int32_t, ClipF<int32_t>)
template __global__ void map2_kernel<float, int64_t, float, Stored<float, PowF>>(const float*, const int64_t*, float*, long,
                                                                                   Stored<float, PowF>);
template __global__ void map2_kernel<int32_t, float, int32_t, Stored<int32_t, PowF>>(const int32_t*, const float*, int32_t*,
                                                                                       long, Stored<int32_t, PowF>);
template __global__ void map3_kernel<bool, Float16, Float16, Float16, WhereF>(const bool*, const Float16*, const Float16*,
                                                                             Float16*, long, WhereF);

#define MPA_CHECK_CAST(From, To) template __global__ void map_kernel<From, To, CastToF<To>>(const From*, To*, long, CastToF<To>);
#define MPA_CHECK_CAST_FROM(From) \
  MPA_CHECK_CAST(From, float) MPA_CHECK_CAST(From, double) MPA_CHECK_CAST(From, Float16) MPA_CHECK_CAST(From, BFloat16) \
  MPA_CHECK_CAST(From, int8_t) MPA_CHECK_CAST(From, int32_t) MPA_CHECK_CAST(From, int64_t) MPA_CHECK_CAST(From, uint8_t) \
  MPA_CHECK_CAST(From, uint64_t) MPA_CHECK_CAST(From, bool)
MPA_CHECK_CAST_FROM(float)
MPA_CHECK_CAST_FROM(double)
MPA_CHECK_CAST_FROM(Float16)
MPA_CHECK_CAST_FROM(BFloat16)
MPA_CHECK_CAST_FROM(int64_t)
MPA_CHECK_CAST_FROM(uint8_t)
MPA_CHECK_CAST_FROM(bool)

template __global__ void round_trip_kernel<Float16>(const float*, float*, long);
template __global__ void round_trip_kernel<BFloat16>(const float*, float*, long);

}  // namespace mpa::cuda_check
