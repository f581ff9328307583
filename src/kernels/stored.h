// Adapts a compute-type functor (unary.h, binary.h) to storage types: loads every operand into its
// compute type, applies the functor, rounds the result once into the output storage type. Both
// backends wrap functors this way, so 16-bit storage is handled in exactly one place.
#pragma once
#include "tensor/hd.h"
#include "tensor/dtype.h"

namespace mpa {

template <class Out, class F> struct Stored {
  F f;
  template <class... X> MPA_HD Out operator()(X... x) const { return store<Out>(f(load(x)...)); }
};

}  // namespace mpa
