// MatMul with numpy semantics: batch dims broadcast, 1-D operands promoted and their dim removed.
// When B has no batch (weights), the batch folds into M and the whole op is one GEMM.
#include "ops/matmul.h"

#include "ops/compute_buffer.h"
#include "ops/matmul_cpu.h"
#include "ops/op.h"
#include "tensor/broadcast.h"

namespace mpa {

std::vector<int64_t> batch_offsets(const Shape& batch, const Shape& out_batch, int64_t matrix_size) {
  const size_t rank = out_batch.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = matrix_size;
  for (size_t i = batch.size(); i-- > 0;) {
    const size_t o = rank - batch.size() + i;
    strides[o] = batch[i] == 1 ? 0 : stride;
    stride *= batch[i];
  }
  const int64_t count = shape_numel(out_batch);
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < count; ++i) {
    offsets[static_cast<size_t>(i)] = off;
    for (size_t d = rank; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < out_batch[d]) break;
      off -= strides[d] * out_batch[d];
      idx[d] = 0;
    }
  }
  return offsets;
}

MatMulGeometry matmul_geometry(const std::string& label, const Tensor& a, const Tensor& b) {
  if (!(a.dtype() == b.dtype())) fail(label + ": A is " + dtype_name(a.dtype()) + ", B is " + dtype_name(b.dtype()));
  return matmul_geometry(label, a.shape(), b.shape());
}

MatMulGeometry matmul_geometry(const std::string& label, const Shape& a_shape, const Shape& b_shape) {
  if (!(a_shape.size() >= 1 && b_shape.size() >= 1))
    fail(label + ": MatMul needs operands of rank >= 1, got " + shape_str(a_shape) + " and " + shape_str(b_shape));
  Shape as = a_shape, bs = b_shape;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  MatMulGeometry g;
  g.M = as[as.size() - 2];
  g.K = as.back();
  g.N = bs.back();
  if (!(bs[bs.size() - 2] == g.K))
    fail(label + ": cannot multiply " + shape_str(a_shape) + " by " + shape_str(b_shape) + " (inner dimensions " +
         std::to_string(g.K) + " and " + std::to_string(bs[bs.size() - 2]) + ")");
  g.a_batch = Shape(as.begin(), as.end() - 2);
  g.b_batch = Shape(bs.begin(), bs.end() - 2);
  g.out_batch = broadcast_shapes({g.a_batch, g.b_batch});
  g.out_shape = g.out_batch;
  if (!a_vec) g.out_shape.push_back(g.M);
  if (!b_vec) g.out_shape.push_back(g.N);
  return g;
}

namespace {

class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(const OpInit&) {}

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatMulGeometry g = matmul_geometry(label, a, b);
    Tensor& y = ctx.allocate_output(0, a.dtype(), g.out_shape);
    if (y.numel() == 0) return;
    const cpu::GemmMath math = gemm_math(ctx.config(), a.dtype());
    visit_gemm_types(a.dtype(), label, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      std::vector<Acc> ah, bh;
      AccOutput<T> out(y);
      matmul_acc<Acc>(g, false, false, Acc(1), as_acc<T>(a, ah), as_acc<T>(b, bh), out.data(), math);
      out.finish();
    });
  }
};

}  // namespace

MPA_OP_TRAITS("", "MatMul", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "MatMul", MatMulOp, 1, 9, 13);

}  // namespace mpa
