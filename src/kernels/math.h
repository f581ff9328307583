// Math functions overloaded on float and double that compile for both the host and CUDA devices. Kernel
// functors call mpa::dmath::exp(x) instead of std::exp / expf so that one template serves float
// (16-bit storage computes in float) and double, and so that nvcc finds a device implementation:
// every function here is a C99 libm name that the CUDA math API also provides for device code.
//
// To add a function: add its name to MPA_DMATH_UNARY (one argument) or MPA_DMATH_BINARY (two).
#pragma once
#include <math.h>

#include <cstdint>
#include <type_traits>

#include "tensor/hd.h"

// On the host, loops over these functions vectorise through glibc's libmvec (same functions, 4/8/16 lanes,
// within a float ulp or two of the scalar ones; docs/numerics.md), declared here as GCC's math headers do
// only under -ffast-math. Needs -fno-math-errno, which the build sets. GCC's attribute: clang (the fuzz build)
// does not know it.
#if !defined(__CUDACC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
extern "C" {
__attribute__((__simd__("notinbranch"))) float expf(float) noexcept;
__attribute__((__simd__("notinbranch"))) float logf(float) noexcept;
#if __GLIBC_PREREQ(2, 35)
__attribute__((__simd__("notinbranch"))) float tanhf(float) noexcept;
__attribute__((__simd__("notinbranch"))) float erff(float) noexcept;
#endif
}
#endif

namespace mpa::dmath {

#define MPA_DMATH_UNARY(X) \
  X(sqrt) X(exp) X(expm1) X(log) X(log1p) X(fabs) X(floor) X(ceil) X(rint) X(trunc) X(erf) X(tanh) X(sin) \
  X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(asinh) X(acosh) X(atanh)
#define MPA_DMATH_BINARY(X) X(pow) X(fmod)

#define MPA_DMATH_DEFINE_UNARY(name)                                 \
  MPA_HD float name(float x) { return ::name##f(x); }               \
  MPA_HD double name(double x) { return ::name(x); }
#define MPA_DMATH_DEFINE_BINARY(name)                                           \
  MPA_HD float name(float x, float y) { return ::name##f(x, y); }              \
  MPA_HD double name(double x, double y) { return ::name(x, y); }
MPA_DMATH_UNARY(MPA_DMATH_DEFINE_UNARY)
MPA_DMATH_BINARY(MPA_DMATH_DEFINE_BINARY)
#undef MPA_DMATH_DEFINE_UNARY
#undef MPA_DMATH_DEFINE_BINARY

// Classification without <cmath> macros (portable between host and device, exact under IEEE).
template <class T> MPA_HD bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}
template <class T> MPA_HD bool is_inf(T x) { return x == static_cast<T>(INFINITY) || x == -static_cast<T>(INFINITY); }

}  // namespace mpa::dmath

namespace mpa {

// Integer arithmetic that wraps (two's complement) instead of overflowing: signed overflow is undefined
// in C++, and uint16*uint16 overflows through int promotion. Computing in a wide-enough unsigned type
// and converting back gives the wrapping result every runtime produces.
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T> MPA_HD T wrap_add(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b)); }
template <class T> MPA_HD T wrap_sub(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b)); }
template <class T> MPA_HD T wrap_mul(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b)); }
template <class T> MPA_HD T wrap_neg(T a) { return static_cast<T>(wrap_t<T>(0) - static_cast<wrap_t<T>>(a)); }

// Float -> integer conversion that is defined for every input: truncation toward zero in range;
// outside int64's range and NaN give INT64_MIN (as x86 and numpy), then wrap to the narrower type.
template <class To, class C> MPA_HD To float_to_integer(C x) {
  constexpr C two63 = C(9223372036854775808.0);
  if constexpr (std::is_same_v<To, uint64_t>)
    if (x >= C(0) && x < C(2) * two63) return static_cast<uint64_t>(x);
  const long long i = (x >= -two63 && x < two63) ? static_cast<long long>(x) : (-9223372036854775807LL - 1);
  return static_cast<To>(i);
}

// True when x < 0; false for unsigned types without a tautological comparison warning.
template <class T> MPA_HD bool is_negative(T x) {
  if constexpr (std::is_unsigned_v<T>) return false;
  else return x < T(0);
}

}  // namespace mpa
