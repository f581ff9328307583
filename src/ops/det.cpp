// Det (11, 22): determinant of each square matrix in [*, M, M], by LU factorisation with partial pivoting
// in compute_t (float for 16-bit inputs), the product of the pivots rounded once.
#include <cmath>
#include <utility>

#include "ops/compute_buffer.h"
#include "ops/op.h"
#include "ops/shape_helpers.h"

namespace mpa {
namespace {

// Determinant of the m x m row-major matrix `a`, which it overwrites with its LU factors.
template <class A>
A lu_determinant(A* a, int64_t m) {
  A det = A(1);
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::abs(a[i * m + k]) > std::abs(a[pivot * m + k])) pivot = i;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
      det = -det;
    }
    const A p = a[k * m + k];
    det *= p;
    if (p == A(0)) return det;  // singular: no elimination by a zero pivot
    for (int64_t i = k + 1; i < m; ++i) {
      const A f = a[i * m + k] / p;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

class DetOp : public OpKernel {
 public:
  explicit DetOp(const OpInit&) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    if (rank < 2 || x.shape()[static_cast<size_t>(rank - 1)] != x.shape()[static_cast<size_t>(rank - 2)])
      fail(ctx.node().label() + ": input must be [*, M, M], got " + shape_str(x.shape()));
    const int64_t m = x.shape().back();
    const Shape out_shape(x.shape().begin(), x.shape().end() - 2);
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), out_shape);
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      parallel_for(y.numel(), std::max<int64_t>(1, 4096 / std::max<int64_t>(m * m * m, 1)), [&](int64_t b, int64_t e) {
        A* a = scratch<A>(0, static_cast<size_t>(m * m));
        for (int64_t i = b; i < e; ++i) {
          for (int64_t j = 0; j < m * m; ++j) a[j] = load(in[i * m * m + j]);
          out[i] = store<T>(lu_determinant(a, m));
        }
      });
    });
  }
};

}  // namespace

// Elimination accumulates products and differences along each row: in FP32 for every storage format, since
// GPU linear algebra (cuSOLVER's getrf, torch.linalg.det) has no 16-bit LU and 16-bit models factor in float.
MPA_OP_TRAITS("", "Det", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "Det", DetOp, 11, 22);

}  // namespace mpa
