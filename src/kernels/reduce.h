// Reduction math, written once for the CPU and CUDA backends: one accumulator functor per ONNX Reduce op
// (plus the moments accumulator the normalisations share, and the ArgMax/ArgMin comparison).
//
// An accumulator functor F<T> for storage type T has
//   using Acc = ...;                          the running state
//   Acc init() const;                         the state of an empty set (the ONNX empty-set value)
//   Acc step(Acc a, T x) const;               folds one stored element in
//   Acc merge(Acc a, Acc b) const;            combines two partial states (lanes, chunks, GPU threads)
//   T finalize(Acc a, int64_t n) const;       n = number of elements reduced; rounds once into T
// The accumulation type is reduce_acc_t<T>: double for float64, float for float32/float16/bfloat16 (as GPU
// runtimes do), the integer type itself for integers (wrapping arithmetic, never UB), bool for bool.
// Math that integers cannot do (mean, sqrt, log) happens in double in finalize and is cast back.
//
// To add a reduction: define it below and list it in MPA_REDUCE_FUNCTORS; device_compile_check.cu
// instantiates every listed functor in device code.
#pragma once
#include <stdint.h>

#include <type_traits>

#include "kernels/math.h"
#include "tensor/dtype.h"

namespace mpa {

// [SECTION] Accumulation types and helpers

template <class T>
using reduce_acc_t = std::conditional_t<std::is_integral_v<T>, T, compute_t<T>>;
// Type in which finalize() does non-integer math (mean, sqrt, log, exp).
template <class A> using reduce_math_t = std::conditional_t<std::is_integral_v<A>, double, A>;

template <class A> MPA_HD A red_add(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) return wrap_add(a, b);
  else return a + b;
}
template <class A> MPA_HD A red_mul(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) return wrap_mul(a, b);
  else return a * b;
}
template <class A> MPA_HD A red_abs(A a) {
  if constexpr (std::is_floating_point_v<A>) return dmath::fabs(a);
  else return is_negative(a) ? wrap_neg(a) : a;
}
template <class A> MPA_HD A lowest_value() {
  if constexpr (std::is_floating_point_v<A>) return -static_cast<A>(INFINITY);
  else if constexpr (std::is_same_v<A, bool>) return false;
  else if constexpr (std::is_signed_v<A>) return static_cast<A>(A(1) << (sizeof(A) * 8 - 1));
  else return A(0);
}
template <class A> MPA_HD A highest_value() {
  if constexpr (std::is_floating_point_v<A>) return static_cast<A>(INFINITY);
  else if constexpr (std::is_same_v<A, bool>) return true;
  else return static_cast<A>(~lowest_value<A>());
}
template <class A> MPA_HD bool nan_value(A x) {
  if constexpr (std::is_floating_point_v<A>) return x != x;
  else return false;
}
// NaN-propagating max/min (numpy.maximum semantics): a NaN operand wins.
// Bitwise | rather than ||: no branch, so contiguous loops vectorise.
template <class A> MPA_HD A nan_max(A a, A b) { return ((b > a) | nan_value(b)) ? b : a; }
template <class A> MPA_HD A nan_min(A a, A b) { return ((b < a) | nan_value(b)) ? b : a; }

template <class T, class M> MPA_HD T store_from(M v) {
  return store<T>(static_cast<compute_t<T>>(v));
}

// [SECTION] The ONNX Reduce accumulators

template <class T> struct ReduceSumF {
  using Acc = reduce_acc_t<T>;
  MPA_HD Acc init() const { return Acc(0); }
  MPA_HD Acc step(Acc a, T x) const { return red_add(a, static_cast<Acc>(load(x))); }
  MPA_HD Acc merge(Acc a, Acc b) const { return red_add(a, b); }
  MPA_HD T finalize(Acc a, int64_t) const { return store_from<T>(a); }
};

// Integer means truncate toward zero, like numpy.mean(dtype=int); an empty float set gives NaN.
template <class T> struct ReduceMeanF : ReduceSumF<T> {
  using Acc = reduce_acc_t<T>;
  MPA_HD T finalize(Acc a, int64_t n) const {
    if constexpr (std::is_integral_v<Acc>) return n == 0 ? T(0) : store_from<T>(a / static_cast<Acc>(n));
    else return store_from<T>(a / static_cast<Acc>(n));
  }
};

template <class T> struct ReduceSumSquareF {
  using Acc = reduce_acc_t<T>;
  MPA_HD Acc init() const { return Acc(0); }
  MPA_HD Acc step(Acc a, T x) const {
    const Acc v = static_cast<Acc>(load(x));
    return red_add(a, red_mul(v, v));
  }
  MPA_HD Acc merge(Acc a, Acc b) const { return red_add(a, b); }
  MPA_HD T finalize(Acc a, int64_t) const { return store_from<T>(a); }
};

template <class T> struct ReduceL2F : ReduceSumSquareF<T> {
  using Acc = reduce_acc_t<T>;
  MPA_HD T finalize(Acc a, int64_t) const {
    return store_from<T>(dmath::sqrt(static_cast<reduce_math_t<Acc>>(a)));
  }
};

template <class T> struct ReduceL1F {
  using Acc = reduce_acc_t<T>;
  MPA_HD Acc init() const { return Acc(0); }
  MPA_HD Acc step(Acc a, T x) const { return red_add(a, red_abs(static_cast<Acc>(load(x)))); }
  MPA_HD Acc merge(Acc a, Acc b) const { return red_add(a, b); }
  MPA_HD T finalize(Acc a, int64_t) const { return store_from<T>(a); }
};

template <class T> struct ReduceLogSumF : ReduceSumF<T> {
  using Acc = reduce_acc_t<T>;
  MPA_HD T finalize(Acc a, int64_t) const {
    return store_from<T>(dmath::log(static_cast<reduce_math_t<Acc>>(a)));
  }
};

template <class T> struct ReduceProdF {
  using Acc = reduce_acc_t<T>;
  MPA_HD Acc init() const { return Acc(1); }
  MPA_HD Acc step(Acc a, T x) const { return red_mul(a, static_cast<Acc>(load(x))); }
  MPA_HD Acc merge(Acc a, Acc b) const { return red_mul(a, b); }
  MPA_HD T finalize(Acc a, int64_t) const { return store_from<T>(a); }
};

// Empty set: -inf for floats, the lowest value for integers, false for bool (ONNX reference).
template <class T> struct ReduceMaxF {
  using Acc = reduce_acc_t<T>;
  MPA_HD Acc init() const { return lowest_value<Acc>(); }
  MPA_HD Acc step(Acc a, T x) const { return nan_max(a, static_cast<Acc>(load(x))); }
  MPA_HD Acc merge(Acc a, Acc b) const { return nan_max(a, b); }
  MPA_HD T finalize(Acc a, int64_t) const { return store_from<T>(a); }
};

template <class T> struct ReduceMinF {
  using Acc = reduce_acc_t<T>;
  MPA_HD Acc init() const { return highest_value<Acc>(); }
  MPA_HD Acc step(Acc a, T x) const { return nan_min(a, static_cast<Acc>(load(x))); }
  MPA_HD Acc merge(Acc a, Acc b) const { return nan_min(a, b); }
  MPA_HD T finalize(Acc a, int64_t) const { return store_from<T>(a); }
};

// log(sum(exp(x))) in one pass with a running maximum (online softmax normaliser): no overflow for
// large x, -inf for an empty set or an all -inf set.
template <class M> struct LogSumExpState {
  M max;
  M sum;  // sum of exp(x - max)
};
template <class M> MPA_HD LogSumExpState<M> lse_add(LogSumExpState<M> a, M x, M weight) {
  if (x > a.max) return {x, a.sum * dmath::exp(a.max - x) + weight};  // a.max == -inf: exp(-inf) = 0
  if (x == a.max) return {a.max, a.sum + weight};                        // also +-inf == +-inf
  return {a.max, a.sum + weight * dmath::exp(x - a.max)};               // NaN x poisons the sum
}
template <class T> struct ReduceLogSumExpF {
  using M = reduce_math_t<reduce_acc_t<T>>;
  using Acc = LogSumExpState<M>;
  MPA_HD Acc init() const { return {-static_cast<M>(INFINITY), M(0)}; }
  MPA_HD Acc step(Acc a, T x) const { return lse_add(a, static_cast<M>(load(x)), M(1)); }
  MPA_HD Acc merge(Acc a, Acc b) const {
    if (b.sum == M(0)) return a;
    if (a.sum == M(0)) return b;
    if (b.max > a.max) {
      const Acc t = a;
      a = b;
      b = t;
    }
    return lse_add(a, b.max, b.sum);
  }
  MPA_HD T finalize(Acc a, int64_t) const {
    if (a.sum == M(0)) return store_from<T>(-static_cast<M>(INFINITY));
    return store_from<T>(a.max + dmath::log(a.sum));
  }
};

// [SECTION] Moments (mean and population variance) for the normalisations

// Welford's running mean/M2, merged with Chan et al.'s formula: stable for large means.
template <class M> struct MomentsState {
  M count;
  M mean;
  M m2;
};
template <class T> struct MomentsF {
  using M = reduce_math_t<reduce_acc_t<T>>;
  using Acc = MomentsState<M>;
  MPA_HD Acc init() const { return {M(0), M(0), M(0)}; }
  MPA_HD Acc step(Acc a, T x) const {
    const M v = static_cast<M>(load(x));
    a.count += M(1);
    const M delta = v - a.mean;
    a.mean += delta / a.count;
    a.m2 += delta * (v - a.mean);
    return a;
  }
  MPA_HD Acc merge(Acc a, Acc b) const {
    if (b.count == M(0)) return a;
    if (a.count == M(0)) return b;
    const M count = a.count + b.count;
    const M delta = b.mean - a.mean;
    return {count, a.mean + delta * (b.count / count), a.m2 + b.m2 + delta * delta * (a.count * b.count / count)};
  }
  // Finalizes to the mean; variance() gives the population variance.
  MPA_HD M mean(Acc a) const { return a.mean; }
  MPA_HD M variance(Acc a) const { return a.count > M(0) ? a.m2 / a.count : M(0); }
};

// [SECTION] ArgMax / ArgMin

// Whether candidate x replaces the current best. The first NaN wins (numpy.argmax/argmin); ties keep the
// first index unless select_last_index.
template <bool kMax> struct ArgBetter {
  bool select_last = false;
  template <class A> MPA_HD bool operator()(A x, A best) const {
    if (nan_value(best)) return false;
    if (nan_value(x)) return true;
    if constexpr (kMax) return select_last ? x >= best : x > best;
    else return select_last ? x <= best : x < best;
  }
};

// Reduction of one strided row [0, n) to its arg index.
template <bool kMax, class T>
MPA_HD int64_t arg_reduce_row(const T* x, int64_t n, int64_t stride, ArgBetter<kMax> better) {
  using A = reduce_acc_t<T>;
  int64_t best_index = 0;
  A best = static_cast<A>(load(x[0]));
  for (int64_t i = 1; i < n; ++i) {
    const A v = static_cast<A>(load(x[i * stride]));
    if (better(v, best)) {
      best = v;
      best_index = i;
    }
  }
  return best_index;
}

// [SECTION] Scans

// Inclusive or exclusive running fold of accumulator `f` (ReduceSumF for CumSum, ReduceProdF for CumProd)
// over a strided row, forward or reversed, accumulated in its Acc and rounded once per output.
template <class F, class T>
MPA_HD void scan_row(F f, const T* x, T* y, int64_t n, int64_t stride, bool exclusive, bool reverse) {
  typename F::Acc acc = f.init();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = (reverse ? n - 1 - k : k) * stride;
    if (exclusive) {
      y[i] = f.finalize(acc, k);
      acc = f.step(acc, x[i]);
    } else {
      acc = f.step(acc, x[i]);
      y[i] = f.finalize(acc, k + 1);
    }
  }
}

// Every accumulator template, for the device compile check: X(Functor template name).
#define MPA_REDUCE_FUNCTORS(X)                                                                           \
  X(ReduceSumF) X(ReduceMeanF) X(ReduceSumSquareF) X(ReduceL2F) X(ReduceL1F) X(ReduceLogSumF) X(ReduceProdF) \
  X(ReduceMaxF) X(ReduceMinF) X(ReduceLogSumExpF)

}  // namespace mpa
