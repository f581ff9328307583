// Elementwise binary op math, written once for the CPU and CUDA backends. Functors take two values in
// the compute type (see unary.h) and return the result in that type (bool for comparisons and logic).
// Integer arithmetic wraps on overflow; integer division by zero (which the ops reject before running)
// yields 0 here rather than trapping, and INT_MIN / -1 wraps, so no input can crash a kernel.
//
// To add a functor: define it and list it in the X-macro matching the types it accepts
// (MPA_BINARY_NUMERIC_FUNCTORS: every numeric type; MPA_BINARY_COMPARE_FUNCTORS: numeric -> bool;
// MPA_BINARY_INTEGER_FUNCTORS: integers only; MPA_BINARY_BOOL_FUNCTORS: bool x bool -> bool).
// src/backends/cuda/device_compile_check.cu instantiates every listed functor in device code.
#pragma once
#include <type_traits>

#include "kernels/math.h"

namespace mpa {

// [SECTION] Arithmetic

struct AddF {
  template <class T> MPA_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return wrap_add(a, b);
    else return a + b;
  }
};
struct SubF {
  template <class T> MPA_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return wrap_sub(a, b);
    else return a - b;
  }
};
struct MulF {
  template <class T> MPA_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return wrap_mul(a, b);
    else return a * b;
  }
};
// Integer division truncates toward zero (C semantics, as onnxruntime).
struct DivF {
  template <class T> MPA_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return wrap_neg(a);
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};
// fmod = true: C fmod / %, result has the sign of the dividend. fmod = false: Python/numpy mod, result
// has the sign of the divisor.
struct ModF {
  bool fmod = false;
  template <class T> MPA_HD T operator()(T a, T b) const {
    T r;
    if constexpr (std::is_integral_v<T>) {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return T(0);
      r = static_cast<T>(a % b);
    } else {
      r = dmath::fmod(a, b);
    }
    if (!fmod && r != T(0) && is_negative(r) != is_negative(b)) r = static_cast<T>(r + b);
    return r;
  }
};
// Numpy minimum/maximum: NaN in either operand gives NaN.
struct MinF {
  template <class T> MPA_HD T operator()(T a, T b) const {
    if (dmath::is_nan(a)) return a;
    return b < a || dmath::is_nan(b) ? b : a;
  }
};
struct MaxF {
  template <class T> MPA_HD T operator()(T a, T b) const {
    if (dmath::is_nan(a)) return a;
    return b > a || dmath::is_nan(b) ? b : a;
  }
};
// Y = X < 0 ? slope * X : X.
struct PReluF {
  template <class T> MPA_HD T operator()(T x, T slope) const { return is_negative(x) ? MulF{}(x, slope) : x; }
};

// Base and exponent may have different types; the result has the base's type. Integer powers are
// exact (wrapping); an integer base with a floating exponent goes through double, as onnxruntime does.
struct PowF {
  template <class T, class E> MPA_HD T operator()(T base, E exponent) const {
    if constexpr (std::is_floating_point_v<T>) {
      return dmath::pow(base, static_cast<T>(exponent));
    } else if constexpr (std::is_floating_point_v<E>) {
      return float_to_integer<T>(dmath::pow(static_cast<double>(base), static_cast<double>(exponent)));
    } else {
      if (is_negative(exponent)) {  // 1 / base^n truncates to 0 unless |base| == 1
        if (base == T(1)) return T(1);
        if constexpr (std::is_signed_v<T>)
          if (base == T(-1)) return (exponent % 2 == 0) ? T(1) : T(-1);
        return T(0);
      }
      T result = T(1);
      unsigned long long n = static_cast<unsigned long long>(exponent);
      while (n) {
        if (n & 1u) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
        n >>= 1;
      }
      return result;
    }
  }
};

// [SECTION] Comparisons (-> bool)

struct EqualF { template <class T> MPA_HD bool operator()(T a, T b) const { return a == b; } };
struct LessF { template <class T> MPA_HD bool operator()(T a, T b) const { return a < b; } };
struct LessOrEqualF { template <class T> MPA_HD bool operator()(T a, T b) const { return a <= b; } };
struct GreaterF { template <class T> MPA_HD bool operator()(T a, T b) const { return a > b; } };
struct GreaterOrEqualF { template <class T> MPA_HD bool operator()(T a, T b) const { return a >= b; } };

// [SECTION] Logic and bits

struct AndF { MPA_HD bool operator()(bool a, bool b) const { return a && b; } };
struct OrF { MPA_HD bool operator()(bool a, bool b) const { return a || b; } };
struct XorF { MPA_HD bool operator()(bool a, bool b) const { return a != b; } };
struct NotF { MPA_HD bool operator()(bool a) const { return !a; } };

struct BitwiseAndF { template <class T> MPA_HD T operator()(T a, T b) const { return static_cast<T>(a & b); } };
struct BitwiseOrF { template <class T> MPA_HD T operator()(T a, T b) const { return static_cast<T>(a | b); } };
struct BitwiseXorF { template <class T> MPA_HD T operator()(T a, T b) const { return static_cast<T>(a ^ b); } };
struct BitwiseNotF { template <class T> MPA_HD T operator()(T a) const { return static_cast<T>(~a); } };
// Unsigned types only (as the spec); shifting by the bit width or more gives 0.
struct BitShiftF {
  bool left = true;
  template <class T> MPA_HD T operator()(T a, T shift) const {
    if (shift >= T(sizeof(T) * 8)) return T(0);
    return left ? static_cast<T>(static_cast<wrap_t<T>>(a) << shift) : static_cast<T>(a >> shift);
  }
};

// [SECTION] Selection (Where): works on storage types directly, since choosing a value is exact.

struct WhereF {
  template <class T> MPA_HD T operator()(bool condition, T x, T y) const { return condition ? x : y; }
};

// [SECTION] Lists (every functor appears in exactly one)

#define MPA_BINARY_NUMERIC_FUNCTORS(X) X(AddF) X(SubF) X(MulF) X(DivF) X(ModF) X(MinF) X(MaxF) X(PReluF) X(PowF)
#define MPA_BINARY_COMPARE_FUNCTORS(X) X(EqualF) X(LessF) X(LessOrEqualF) X(GreaterF) X(GreaterOrEqualF)
#define MPA_BINARY_INTEGER_FUNCTORS(X) X(BitwiseAndF) X(BitwiseOrF) X(BitwiseXorF) X(BitShiftF)
#define MPA_BINARY_BOOL_FUNCTORS(X) X(AndF) X(OrF) X(XorF)
#define MPA_UNARY_INTEGER_FUNCTORS(X) X(BitwiseNotF)
#define MPA_UNARY_BOOL_FUNCTORS(X) X(NotF)

}  // namespace mpa
