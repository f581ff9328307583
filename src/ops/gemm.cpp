// Gemm: Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N] (optional from opset 11).
// C is written into Y first and the BLAS computes alpha * AB + beta * Y onto it.
#include "ops/gemm.h"

#include "backends/cpu/gemm.h"
#include "ops/compute_buffer.h"

namespace mpa {

GemmGeometry GemmAttrs::geometry(const std::string& label, const Tensor& a, const Tensor& b, const Tensor* c) const {
  if (!(a.rank() == 2 && b.rank() == 2))
    fail(label + ": A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()) + " must be matrices");
  if (!(a.dtype() == b.dtype() && (!c || c->dtype() == a.dtype()))) fail(label + ": inputs differ in element type");
  GemmGeometry g;
  g.M = trans_a ? a.dim(1) : a.dim(0);
  g.K = trans_a ? a.dim(0) : a.dim(1);
  g.N = trans_b ? b.dim(0) : b.dim(1);
  const int64_t Kb = trans_b ? b.dim(1) : b.dim(0);
  if (!(g.K == Kb))
    fail(label + ": inner dimensions differ: op(A) is " + std::to_string(g.M) + "x" + std::to_string(g.K) +
         ", op(B) is " + std::to_string(Kb) + "x" + std::to_string(g.N));
  if (c) {
    const int64_t cm = c->rank() == 2 ? c->dim(0) : 1, cn = c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
    if (!(c->rank() <= 2 && (cm == 1 || cm == g.M) && (cn == 1 || cn == g.N)))
      fail(label + ": C has shape " + shape_str(c->shape()) + ", not broadcastable to " + std::to_string(g.M) + "x" +
           std::to_string(g.N));
    g.c_col = cn == 1 ? 0 : 1;
    g.c_row = cm == 1 ? 0 : cn;
  }
  return g;
}

namespace {

// ORT CUDA EP rule (docs/numerics.md, "MatMul/Gemm fp16 (ORT CUDA EP)"): Gemm<MLFloat16> converts alpha and
// beta to half before calling cuBLAS, so alpha = 1.0004 acts as 1 and beta = 0.1 as 0.0999755859375.
float ort_cuda_gemm_scalar(float scalar) { return round_to_format(Format::FP16, scalar); }

class GemmOp : public OpKernel {
 public:
  explicit GemmOp(const OpInit& init) : attrs_(init) {}

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* c = ctx.optional_input(2);
    const GemmGeometry g = attrs_.geometry(label, a, b, c);
    const int64_t M = g.M, N = g.N, K = g.K, c_row = g.c_row, c_col = g.c_col;
    Tensor& y = ctx.allocate_output(0, a.dtype(), {M, N});
    const bool ort_cuda = ort_cuda_fp16_rules(ctx.config(), a.dtype());
    const float alpha = ort_cuda ? ort_cuda_gemm_scalar(attrs_.alpha) : attrs_.alpha;
    const float beta = ort_cuda ? ort_cuda_gemm_scalar(attrs_.beta) : attrs_.beta;
    const cpu::GemmMath math = gemm_math(ctx.config(), a.dtype());
    visit_gemm_types(a.dtype(), label, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      std::vector<Acc> ah, bh, ch;
      const Acc* pa = as_acc<T>(a, ah);
      const Acc* pb = as_acc<T>(b, bh);
      AccOutput<T> out(y);
      Acc* py = out.data();
      // C is broadcast into Y as it is and the BLAS applies beta in its epilogue, as ORT does (one
      // rounding of alpha * AB + beta * C under every profile).
      const bool use_c = c && beta != 0.f;
      if (use_c) {
        const Acc* pc = as_acc<T>(*c, ch);
        parallel_for(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)), [&](int64_t lo, int64_t hi) {
          for (int64_t m = lo; m < hi; ++m)
            for (int64_t n = 0; n < N; ++n) py[m * N + n] = pc[m * c_row + n * c_col];
        });
      }
      cpu::gemm(attrs_.trans_a, attrs_.trans_b, M, N, K, static_cast<Acc>(alpha), pa, a.dim(1), pb, b.dim(1),
                use_c ? static_cast<Acc>(beta) : Acc(0), py, N, math);
      out.finish();
    });
  }

 private:
  GemmAttrs attrs_;
};

}  // namespace

MPA_OP_TRAITS("", "Gemm", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "Gemm", GemmOp, 1, 6, 7, 9, 11, 13);

}  // namespace mpa
