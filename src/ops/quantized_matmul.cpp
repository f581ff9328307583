// MatMulInteger (10) and QLinearMatMul (10, 21): int8/uint8 matrices with zero points per tensor, per row
// of A or per column of B, multiplied with int32 sums (exact: no rounding until QLinearMatMul rescales
// each sum once, as ONNX's reference does: sum * (a_scale * b_scale / y_scale) in the scales' float type,
// the product in float64, rounded to nearest even, plus y_zero_point, saturated).
#include <algorithm>
#include <vector>

#include "ops/matmul.h"
#include "ops/quantize.h"

namespace mpa {

namespace {

// x - zero_point as int32, the zero point taken per tensor or per entry of the dimension `dim_of` picks
// (rows of A, columns of B). A 1-D zero point must have that dimension's length.
Tensor centred(const std::string& who, const char* name, const Tensor& x, const Tensor* zero_point, int64_t dim,
               int64_t stride) {
  if (!(x.dtype() == DType::Int8 || x.dtype() == DType::UInt8))
    fail(who + ": " + name + " must be int8 or uint8, not " + dtype_name(x.dtype()));
  std::vector<int64_t> zps = {0};
  if (zero_point) {
    if (zero_point->dtype() != x.dtype())
      fail(who + ": " + name + "'s zero point is " + dtype_name(zero_point->dtype()) + ", not " +
           dtype_name(x.dtype()));
    if (!(zero_point->numel() == 1 || (zero_point->rank() == 1 && zero_point->dim(0) == dim)))
      fail(who + ": " + name + "'s zero point must be a scalar or 1-D of length " + std::to_string(dim) + ", got " +
           shape_str(zero_point->shape()));
    zps = zero_point->to_int64_vector();
  }
  const std::vector<int64_t> values = x.to_int64_vector();
  Tensor out(DType::Int32, x.shape());
  int32_t* o = out.data<int32_t>();
  for (int64_t i = 0; i < x.numel(); ++i)
    o[i] = static_cast<int32_t>(values[static_cast<size_t>(i)] -
                                zps[zps.size() == 1 ? 0 : static_cast<size_t>((i / stride) % dim)]);
  return out;
}

// The rows of A: M, each K elements apart; the columns of B: N, next to each other.
int64_t rows_of(const Tensor& a) { return a.rank() >= 2 ? a.dim(a.rank() - 2) : 1; }
int64_t cols_of(const Tensor& b) { return b.rank() >= 2 ? b.dim(b.rank() - 1) : 1; }

struct IntegerProduct {
  MatMulGeometry g;
  std::vector<int32_t> sums;  // g.out_shape, row-major
};

IntegerProduct integer_matmul(const std::string& who, const Tensor& a, const Tensor* a_zero_point, const Tensor& b,
                              const Tensor* b_zero_point) {
  const Tensor ca = centred(who, "A", a, a_zero_point, rows_of(a), a.rank() >= 1 ? a.dim(a.rank() - 1) : 1);
  const Tensor cb = centred(who, "B", b, b_zero_point, cols_of(b), 1);
  IntegerProduct p{matmul_geometry(who, ca, cb), {}};
  const MatMulGeometry& g = p.g;
  const std::vector<int64_t> a_off = batch_offsets(g.a_batch, g.out_batch, g.M * g.K);
  const std::vector<int64_t> b_off = batch_offsets(g.b_batch, g.out_batch, g.K * g.N);
  const int64_t batches = static_cast<int64_t>(a_off.size());
  p.sums.assign(static_cast<size_t>(batches * g.M * g.N), 0);
  const int32_t* A = ca.data<int32_t>();
  const int32_t* B = cb.data<int32_t>();
  int32_t* C = p.sums.data();
  parallel_for(batches * g.M, std::max<int64_t>(1, 4096 / std::max<int64_t>(g.K * g.N, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   const int32_t* arow = A + a_off[static_cast<size_t>(r / g.M)] + (r % g.M) * g.K;
                   const int32_t* bmat = B + b_off[static_cast<size_t>(r / g.M)];
                   int32_t* crow = C + r * g.N;
                   for (int64_t k = 0; k < g.K; ++k)
                     for (int64_t n = 0; n < g.N; ++n) crow[n] += arow[k] * bmat[k * g.N + n];
                 }
               });
  return p;
}

class MatMulIntegerOp : public OpKernel {
 public:
  explicit MatMulIntegerOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const IntegerProduct p =
        integer_matmul(ctx.node().label(), ctx.input(0), ctx.optional_input(2), ctx.input(1), ctx.optional_input(3));
    Tensor& y = ctx.allocate_output(0, DType::Int32, p.g.out_shape);
    std::copy(p.sums.begin(), p.sums.end(), y.data<int32_t>());
  }
};

class QLinearMatMulOp : public OpKernel {
 public:
  explicit QLinearMatMulOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor &a = ctx.input(0), &a_scale = ctx.input(1), &b = ctx.input(3), &b_scale = ctx.input(4);
    const Tensor &y_scale = ctx.input(6), &y_zero_point = ctx.input(7);
    const IntegerProduct p = integer_matmul(who, a, &ctx.input(2), b, &ctx.input(5));
    const int64_t M = rows_of(a), N = cols_of(b);
    auto per = [&](const Tensor& scale, const char* name, int64_t dim) {
      if (!dtype_is_float(scale.dtype())) fail(who + ": " + name + " must be a float tensor");
      if (!(scale.numel() == 1 || (scale.rank() == 1 && scale.dim(0) == dim)))
        fail(who + ": " + name + " must be a scalar or 1-D of length " + std::to_string(dim));
      return scale.to_double_vector();
    };
    const std::vector<double> sa = per(a_scale, "a_scale", M), sb = per(b_scale, "b_scale", N),
                              sy = per(y_scale, "y_scale", 1);
    if (y_zero_point.numel() != 1) fail(who + ": y_zero_point must be a scalar");
    const DType scale_t = promoted_float_type(promoted_float_type(a_scale.dtype(), b_scale.dtype()), y_scale.dtype());
    const double zero_point = y_zero_point.to_double_vector()[0];
    const auto [lo, hi] = integer_range(y_zero_point.dtype());
    Tensor& y = ctx.allocate_output(0, y_zero_point.dtype(), p.g.out_shape);
    write_integers(y, who, [&, lo = lo, hi = hi](int64_t i) {
      const double s_a = sa[sa.size() == 1 ? 0 : static_cast<size_t>((i / N) % M)];
      const double s_b = sb[sb.size() == 1 ? 0 : static_cast<size_t>(i % N)];
      const double multiplier = round_to_float_type(scale_t, round_to_float_type(scale_t, s_a * s_b) / sy[0]);
      return saturate_rounded(p.sums[static_cast<size_t>(i)] * multiplier, zero_point, lo, hi);
    });
  }
};

}  // namespace

// Integer sums are exact: no float rounding anywhere in MatMulInteger.
MPA_OP_TRAITS("", "MatMulInteger", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "MatMulInteger", MatMulIntegerOp, 10);
// One rounding per output element (the rescale), after exact integer sums.
MPA_OP_TRAITS("", "QLinearMatMul", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "QLinearMatMul", QLinearMatMulOp, 10, 21);

}  // namespace mpa
