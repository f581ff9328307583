// The CPU backend's elementwise launchers: parallel loops that apply a storage-type functor (usually
// Stored<Out, F> around a functor from src/kernels/) to dense tensors, with numpy broadcasting through
// BroadcastRuns. Inner loops are specialised on whether each operand advances or stays put, so the
// common cases (same shape, tensor with scalar, row/column broadcast) compile to plain vector loops.
#pragma once
#include <cstdint>

#include "common/parallel.h"
#include "backends/cpu/broadcast_loops.h"
#include "tensor/tensor.h"

namespace mpa::cpu {

// Whether loops are also compiled for AVX2 and picked at run time: GCC on x86-64 (clang, the fuzz build,
// and nvcc build the baseline loops only).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define MPA_AVX2_DISPATCH 1
#else
#define MPA_AVX2_DISPATCH 0
#endif

// Elements worth a thread for a cheap elementwise op.
inline constexpr int64_t kElementwiseGrain = 1 << 14;

// out[i] = f(in[i]) for i in [0, n).
// map_unary's loop is also compiled for AVX2, picked at run time on CPUs that have it: functors over
// exp/tanh/erf (Sigmoid, Swish, Tanh, Erf, Gelu, Exp) then vectorise with libmvec's 8-lane variants instead
// of the 4-lane SSE ones of the baseline x86-64 build (YOLOX's SiLUs spent a third of its run there). Not
// the 16-lane AVX-512 variants: their erf and tanh are 3-4 float ulps off, which the cancellation in Gelu
// below x = -4 magnifies past what GPUs compute; the 8-lane ones stay within 2 (tests/exhaustive). The
// build sets -ffp-contract=off, so the clone fuses no multiply-add that the baseline does not.
// Inlined into each caller, so that the loop is compiled for the caller's target.
template <class In, class Out, class F>
__attribute__((always_inline)) inline void map_span(const In* in, Out* out, int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

// One run of map_binary: a and b each advance with the output or stay put (a_steps, b_steps).
template <class A, class B, class Out, class F>
__attribute__((always_inline)) inline void map_binary_span(const A* pa, bool a_steps, const B* pb, bool b_steps,
                                                           Out* po, int64_t n, const F& f) {
  if (a_steps && b_steps) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
  } else if (a_steps) {
    const B vb = *pb;
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], vb);
  } else if (b_steps) {
    const A va = *pa;
    for (int64_t i = 0; i < n; ++i) po[i] = f(va, pb[i]);
  } else {
    const Out v = f(*pa, *pb);
    for (int64_t i = 0; i < n; ++i) po[i] = v;
  }
}

#if MPA_AVX2_DISPATCH
template <class In, class Out, class F>
__attribute__((target("avx2,fma"))) void map_span_avx2(const In* in, Out* out, int64_t n, const F& f) {
  map_span(in, out, n, f);
}
template <class A, class B, class Out, class F>
__attribute__((target("avx2,fma"))) void map_binary_span_avx2(const A* pa, bool a_steps, const B* pb, bool b_steps,
                                                              Out* po, int64_t n, const F& f) {
  map_binary_span(pa, a_steps, pb, b_steps, po, n, f);
}
inline bool cpu_has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2;
}
#endif

// map_unary's loop over one span, on the calling thread (also an epilogue's, ops/op.h).
template <class In, class Out, class F> void map_unary_span(const In* in, Out* out, int64_t n, const F& f) {
#if MPA_AVX2_DISPATCH
  if (cpu_has_avx2()) return map_span_avx2(in, out, n, f);
#endif
  map_span(in, out, n, f);
}

template <class In, class Out, class F> void map_unary(const In* in, Out* out, int64_t n, const F& f) {
  parallel_for(n, kElementwiseGrain,
               [&](int64_t begin, int64_t end) { map_unary_span(in + begin, out + begin, end - begin, f); });
}

// One run of map_binary on the calling thread (also an epilogue's, ops/op.h).
template <class A, class B, class Out, class F>
void map_binary_run(const A* pa, bool a_steps, const B* pb, bool b_steps, Out* po, int64_t n, const F& f) {
#if MPA_AVX2_DISPATCH
  if (cpu_has_avx2()) return map_binary_span_avx2(pa, a_steps, pb, b_steps, po, n, f);
#endif
  map_binary_span(pa, a_steps, pb, b_steps, po, n, f);
}

// out = f(a, b) with numpy broadcasting; out is dense with the broadcast shape of a and b. The runs are
// compiled for AVX2 too, as map_unary's loop (Add, Mul and Div of a mobile network's activations ran 4 lanes).
template <class A, class B, class Out, class F>
void map_binary(const A* a, const Shape& a_shape, const B* b, const Shape& b_shape, Out* out, const Shape& out_shape,
                const F& f) {
  for_each_broadcast_span(out_shape, {a_shape, b_shape}, kElementwiseGrain,
                          [&](int64_t o, const int64_t* off, const int64_t* step, int64_t n) {
                            map_binary_run(a + off[0], step[0] != 0, b + off[1], step[1] != 0, out + o, n, f);
                          });
}

// out = f(a, b, c) with numpy broadcasting (Where).
template <class A, class B, class C, class Out, class F>
void map_ternary(const A* a, const Shape& a_shape, const B* b, const Shape& b_shape, const C* c, const Shape& c_shape,
                 Out* out, const Shape& out_shape, const F& f) {
  for_each_broadcast_span(out_shape, {a_shape, b_shape, c_shape}, kElementwiseGrain,
                          [&](int64_t o, const int64_t* off, const int64_t* step, int64_t n) {
                            const A* pa = a + off[0];
                            const B* pb = b + off[1];
                            const C* pc = c + off[2];
                            Out* po = out + o;
                            if (step[0] && step[1] && step[2]) {
                              for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i], pc[i]);
                            } else {
                              const int64_t sa = step[0], sb = step[1], sc = step[2];
                              for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i * sa], pb[i * sb], pc[i * sc]);
                            }
                          });
}

}  // namespace mpa::cpu
