// Gemm's attributes and geometry, shared by the CPU and CUDA kernels: Y[M, N] = alpha * op(A) op(B) +
// beta * C, with C broadcast unidirectionally to [M, N]; checks fail naming the node.
#pragma once
#include <string>

#include "ops/op.h"

namespace mpa {

struct GemmGeometry {
  int64_t M = 0, N = 0, K = 0;
  int64_t c_row = 0, c_col = 0;  // C's element steps along Y's rows and columns (0 where it broadcasts)
};

class GemmAttrs {
 public:
  explicit GemmAttrs(const OpInit& init)
      : trans_a(init.get_int("transA", 0) != 0),
        trans_b(init.get_int("transB", 0) != 0),
        alpha(init.get_float("alpha", 1.f)),
        beta(init.get_float("beta", 1.f)) {}
  GemmGeometry geometry(const std::string& label, const Tensor& a, const Tensor& b, const Tensor* c) const;

  bool trans_a, trans_b;
  float alpha, beta;
};

}  // namespace mpa
