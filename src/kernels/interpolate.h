// Interpolation kernels shared by the resampling ops (Resize, GridSample) on every backend.
#pragma once
#include "kernels/math.h"

namespace mpa {

// Keys' cubic convolution kernel W(x) with parameter a (-0.75 in PyTorch and ONNX by default, -0.5 in
// TensorFlow): the weight of a tap at distance x from the sample point; zero from distance 2 on.
template <class A>
MPA_HD A cubic_convolution(A x, A a) {
  x = dmath::fabs(x);
  if (x <= A(1)) return ((a + A(2)) * x - (a + A(3))) * x * x + A(1);
  if (x < A(2)) return ((a * x - A(5) * a) * x + A(8) * a) * x - A(4) * a;
  return A(0);
}

}  // namespace mpa
