// Element conversion between every stored type (Cast, CastLike, and the executor's precision casts),
// written once for the CPU and CUDA backends. Unlike the other functors this one works on storage
// types: 16-bit floats are widened exactly and rounded once (round to nearest even) when produced.
//   float -> integer: truncation toward zero, as C. Out-of-range values and NaN, undefined in C, are
//                     defined here as x86 and numpy do it: through int64 (INT64_MIN when outside its
//                     range), then wrapped to the narrower type.
//   any -> bool:      x != 0 (NaN is true, as numpy).
#pragma once
#include <cstdint>
#include <type_traits>

#include "tensor/hd.h"
#include "kernels/math.h"
#include "tensor/dtype.h"

namespace mpa {

template <class To, class From> MPA_HD To cast_value(From v) {
  using C = compute_t<From>;
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else {
    const C x = load(v);
    if constexpr (std::is_same_v<To, bool>) return x != C(0);
    else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<C>) return float_to_integer<To>(x);
    else if constexpr (std::is_same_v<To, Float16> || std::is_same_v<To, BFloat16>) return store<To>(static_cast<float>(x));
    else return static_cast<To>(x);
  }
}

template <class To> struct CastToF {
  template <class From> MPA_HD To operator()(From v) const { return cast_value<To>(v); }
};

}  // namespace mpa
