// Elementwise unary op math, written once for the CPU and CUDA backends. Each functor maps one value in
// the compute type (float for float32/float16/bfloat16 storage, double for float64, the integer itself
// for integer storage) to a value of the same type; callers load() before and store() after, so 16-bit
// storage sees exactly one rounding per op. Attributes are plain members with the ONNX defaults.
//
// To add a functor: define it below and list it in the X-macro matching the types it accepts
// (MPA_UNARY_FLOAT_FUNCTORS: floating types only; MPA_UNARY_SIGNED_FUNCTORS: floats and signed ints;
// MPA_UNARY_NUMERIC_FUNCTORS: every numeric type; MPA_UNARY_PREDICATE_FUNCTORS: float -> bool).
// src/backends/cuda/device_compile_check.cu instantiates every listed functor in device code.
#pragma once
#include <type_traits>

#include "kernels/math.h"

namespace mpa {

// [SECTION] Arithmetic and rounding

struct SqrtF { template <class T> MPA_HD T operator()(T x) const { return dmath::sqrt(x); } };
struct ExpF { template <class T> MPA_HD T operator()(T x) const { return dmath::exp(x); } };
struct LogF { template <class T> MPA_HD T operator()(T x) const { return dmath::log(x); } };
struct ReciprocalF { template <class T> MPA_HD T operator()(T x) const { return T(1) / x; } };
struct FloorF { template <class T> MPA_HD T operator()(T x) const { return dmath::floor(x); } };
struct CeilF { template <class T> MPA_HD T operator()(T x) const { return dmath::ceil(x); } };
// Round half to even (the default IEEE rounding mode, which the runtime never changes).
struct RoundF { template <class T> MPA_HD T operator()(T x) const { return dmath::rint(x); } };
struct ErfF { template <class T> MPA_HD T operator()(T x) const { return dmath::erf(x); } };

struct AbsF {
  template <class T> MPA_HD T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return dmath::fabs(x);
    else return is_negative(x) ? wrap_neg(x) : x;
  }
};
struct NegF {
  template <class T> MPA_HD T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return -x;
    else return wrap_neg(x);
  }
};
// -1, 0 or 1; NaN stays NaN.
struct SignF {
  template <class T> MPA_HD T operator()(T x) const {
    if (x > T(0)) return T(1);
    if (is_negative(x)) return T(-1);
    return x;
  }
};

// [SECTION] Trigonometric and hyperbolic

struct SinF { template <class T> MPA_HD T operator()(T x) const { return dmath::sin(x); } };
struct CosF { template <class T> MPA_HD T operator()(T x) const { return dmath::cos(x); } };
struct TanF { template <class T> MPA_HD T operator()(T x) const { return dmath::tan(x); } };
struct AsinF { template <class T> MPA_HD T operator()(T x) const { return dmath::asin(x); } };
struct AcosF { template <class T> MPA_HD T operator()(T x) const { return dmath::acos(x); } };
struct AtanF { template <class T> MPA_HD T operator()(T x) const { return dmath::atan(x); } };
struct SinhF { template <class T> MPA_HD T operator()(T x) const { return dmath::sinh(x); } };
struct CoshF { template <class T> MPA_HD T operator()(T x) const { return dmath::cosh(x); } };
struct AsinhF { template <class T> MPA_HD T operator()(T x) const { return dmath::asinh(x); } };
struct AcoshF { template <class T> MPA_HD T operator()(T x) const { return dmath::acosh(x); } };
struct AtanhF { template <class T> MPA_HD T operator()(T x) const { return dmath::atanh(x); } };

// [SECTION] Activations

// max(x, 0) as numpy.maximum (ONNX's reference): NaN propagates and -0 stays -0 (x > 0 ? x : 0 would turn NaN
// into 0 and hide it from the audit).
struct ReluF { template <class T> MPA_HD T operator()(T x) const { return x < T(0) ? T(0) : x; } };
struct TanhF { template <class T> MPA_HD T operator()(T x) const { return dmath::tanh(x); } };
struct SigmoidF {
  // Written so exp never overflows: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below; one exp and no
  // branch, so that loops vectorise.
  template <class T> MPA_HD T operator()(T x) const {
    const T e = dmath::exp(-dmath::fabs(x));
    return (x >= T(0) ? T(1) : e) / (T(1) + e);
  }
};
struct SwishF {
  float alpha = 1.0f;
  template <class T> MPA_HD T operator()(T x) const { return x * SigmoidF{}(T(alpha) * x); }
};
struct LeakyReluF {
  float alpha = 0.01f;
  template <class T> MPA_HD T operator()(T x) const { return x >= T(0) ? x : T(alpha) * x; }
};
struct EluF {
  float alpha = 1.0f;
  template <class T> MPA_HD T operator()(T x) const { return x >= T(0) ? x : T(alpha) * dmath::expm1(x); }
};
struct SeluF {
  float alpha = 1.67326319217681884765625f, gamma = 1.05070102214813232421875f;
  template <class T> MPA_HD T operator()(T x) const {
    return x > T(0) ? T(gamma) * x : T(gamma) * T(alpha) * dmath::expm1(x);
  }
};
struct CeluF {
  float alpha = 1.0f;
  template <class T> MPA_HD T operator()(T x) const {
    return x > T(0) ? x : T(alpha) * dmath::expm1(x / T(alpha));
  }
};
struct ThresholdedReluF {
  float alpha = 1.0f;
  template <class T> MPA_HD T operator()(T x) const { return x > T(alpha) ? x : T(0); }
};
struct HardSigmoidF {
  float alpha = 0.2f, beta = 0.5f;
  template <class T> MPA_HD T operator()(T x) const {
    const T y = T(alpha) * x + T(beta);
    return y < T(0) ? T(0) : (y > T(1) ? T(1) : y);
  }
};
struct HardSwishF {
  template <class T> MPA_HD T operator()(T x) const {
    const T y = x / T(6) + T(0.5);
    return x * (y < T(0) ? T(0) : (y > T(1) ? T(1) : y));
  }
};
// log(1 + e^x) without overflow for large x.
struct SoftplusF {
  template <class T> MPA_HD T operator()(T x) const {
    return x > T(0) ? x + dmath::log1p(dmath::exp(-x)) : dmath::log1p(dmath::exp(x));
  }
};
struct SoftsignF { template <class T> MPA_HD T operator()(T x) const { return x / (T(1) + dmath::fabs(x)); } };
struct MishF {
  template <class T> MPA_HD T operator()(T x) const { return x * dmath::tanh(SoftplusF{}(x)); }
};
struct GeluF {
  bool tanh_approximation = false;
  template <class T> MPA_HD T operator()(T x) const {
    if (tanh_approximation) {
      const T k = T(0.7978845608028654);  // sqrt(2/pi)
      return T(0.5) * x * (T(1) + dmath::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + dmath::erf(x * T(0.7071067811865476)));
  }
};
// Integers compare and shift in double (lambd and bias are floats), then convert back wrapping.
// Integers compare and shift in double (lambd and bias are floats), then convert back as Cast does.
struct ShrinkF {
  float lambd = 0.5f, bias = 0.0f;
  template <class T> MPA_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return float_to_integer<T>((*this)(static_cast<double>(x)));
    } else {
      if (x < -T(lambd)) return x + T(bias);
      if (x > T(lambd)) return x - T(bias);
      return T(0);
    }
  }
};

// [SECTION] Predicates (float -> bool)

struct IsNaNF { template <class T> MPA_HD bool operator()(T x) const { return dmath::is_nan(x); } };
struct IsInfF {
  bool detect_negative = true, detect_positive = true;
  template <class T> MPA_HD bool operator()(T x) const {
    return dmath::is_inf(x) && (x > T(0) ? detect_positive : detect_negative);
  }
};

// [SECTION] Clip: min(max(x, lo), hi); NaN stays NaN; lo > hi gives hi everywhere (as the spec says).

template <class T> struct ClipF {
  T lo, hi;
  MPA_HD T operator()(T x) const {
    const T y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};

// [SECTION] Lists (every functor appears in exactly one)

#define MPA_UNARY_FLOAT_FUNCTORS(X)                                                                         \
  X(SqrtF) X(ExpF) X(LogF) X(ReciprocalF) X(FloorF) X(CeilF) X(RoundF) X(ErfF) X(SinF) X(CosF) X(TanF)      \
  X(AsinF) X(AcosF) X(AtanF) X(SinhF) X(CoshF) X(AsinhF) X(AcoshF) X(AtanhF) X(TanhF) X(SigmoidF) X(SwishF)  \
  X(LeakyReluF) X(EluF) X(SeluF) X(CeluF) X(ThresholdedReluF) X(HardSigmoidF) X(HardSwishF) X(SoftplusF) \
  X(SoftsignF) X(MishF) X(GeluF)
#define MPA_UNARY_SIGNED_FUNCTORS(X) X(NegF) X(ReluF)
#define MPA_UNARY_NUMERIC_FUNCTORS(X) X(AbsF) X(SignF) X(ShrinkF)
#define MPA_UNARY_PREDICATE_FUNCTORS(X) X(IsNaNF) X(IsInfF)

}  // namespace mpa
