// MatMul with numpy semantics: batch dims broadcast, 1-D operands promoted and their dim removed.
// When B has no batch (weights), the batch folds into M and the whole op is one GEMM.
#include "ops/matmul.h"

#include "backends/cpu/gemm.h"
#include "ops/compute_buffer.h"
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
  if (!(a.rank() >= 1 && b.rank() >= 1))
    fail(label + ": MatMul needs operands of rank >= 1, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
  if (!(a.dtype() == b.dtype())) fail(label + ": A is " + dtype_name(a.dtype()) + ", B is " + dtype_name(b.dtype()));
  Shape as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  MatMulGeometry g;
  g.M = as[as.size() - 2];
  g.K = as.back();
  g.N = bs.back();
  if (!(bs[bs.size() - 2] == g.K))
    fail(label + ": cannot multiply " + shape_str(a.shape()) + " by " + shape_str(b.shape()) + " (inner dimensions " +
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
    const int64_t M = g.M, N = g.N, K = g.K;
    const Shape &a_batch = g.a_batch, &b_batch = g.b_batch, &out_batch = g.out_batch, &out_shape = g.out_shape;
    Tensor& y = ctx.allocate_output(0, a.dtype(), out_shape);
    if (y.numel() == 0) return;
    const cpu::GemmMath math = gemm_math(ctx.config(), a.dtype());
    visit_gemm_types(a.dtype(), label, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      std::vector<Acc> ah, bh;
      const Acc* pa = as_acc<T>(a, ah);
      const Acc* pb = as_acc<T>(b, bh);
      AccOutput<T> out(y);
      Acc* py = out.data();
      const int64_t batch = shape_numel(out_batch);
      if (shape_numel(b_batch) == 1 && shape_numel(a_batch) == batch) {
        cpu::gemm(false, false, batch * M, N, K, Acc(1), pa, K, pb, N, Acc(0), py, N, math);  // batch folds into M
      } else {
        const auto ao = batch_offsets(a_batch, out_batch, M * K), bo = batch_offsets(b_batch, out_batch, K * N);
        std::vector<int64_t> co(static_cast<size_t>(batch));
        for (int64_t i = 0; i < batch; ++i) co[static_cast<size_t>(i)] = i * M * N;
        cpu::gemm_batched<Acc>(false, false, M, N, K, Acc(1), pa, K, ao.data(), pb, N, bo.data(), Acc(0), py, N,
                               co.data(), batch, math);
      }
      out.finish();
    });
  }
};

}  // namespace

MPA_OP_TRAITS("", "MatMul", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "MatMul", MatMulOp, 1, 9, 13);

}  // namespace mpa
