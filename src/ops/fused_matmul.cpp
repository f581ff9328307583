// com.microsoft FusedMatMul (onnxruntime contrib op, MatMul with its operands' Transposes and a scalar Mul
// folded in): Y = alpha * op(A) op(B), numpy MatMul batching. transA/transB swap an operand's last two dims;
// transBatchA/transBatchB (rank >= 3, equal ranks, as onnxruntime requires) first move its dim 0 behind the
// other batch dims: [d0, d1, .., dr-2, dr-1] -> [d1, .., dr-2, d0, dr-1].
#include "ops/compute_buffer.h"
#include "ops/copy_strided.h"
#include "ops/matmul_cpu.h"
#include "ops/op.h"

namespace mpa {
namespace {

// The axis order that transBatch and trans give an operand of this rank.
std::vector<int64_t> operand_perm(int64_t rank, bool trans_batch, bool trans) {
  std::vector<int64_t> perm;
  for (int64_t d = trans_batch ? 1 : 0; d < rank - 1; ++d) perm.push_back(d);
  if (trans_batch) perm.push_back(0);
  perm.push_back(rank - 1);
  if (trans && rank >= 2) std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

class FusedMatMulOp : public OpKernel {
 public:
  explicit FusedMatMulOp(const OpInit& init)
      : alpha_(init.get_float("alpha", 1.0f)),
        trans_a_(init.get_int("transA", 0) != 0),
        trans_b_(init.get_int("transB", 0) != 0),
        trans_batch_a_(init.get_int("transBatchA", 0) != 0),
        trans_batch_b_(init.get_int("transBatchB", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (!(a.dtype() == b.dtype())) fail(label + ": A is " + dtype_name(a.dtype()) + ", B is " + dtype_name(b.dtype()));
    if ((trans_batch_a_ || trans_batch_b_) && !(a.rank() >= 3 && a.rank() == b.rank()))
      fail(label + ": transBatchA/transBatchB need operands of equal rank >= 3, got " + shape_str(a.shape()) + " and " +
           shape_str(b.shape()));
    const std::vector<int64_t> pa = operand_perm(a.rank(), trans_batch_a_, trans_a_);
    const std::vector<int64_t> pb = operand_perm(b.rank(), trans_batch_b_, trans_b_);
    const MatMulGeometry g = matmul_geometry(label, permuted(a.shape(), pa), permuted(b.shape(), pb));
    Tensor& y = ctx.allocate_output(0, a.dtype(), g.out_shape);
    if (y.numel() == 0) return;
    const cpu::GemmMath math = gemm_math(ctx.config(), a.dtype());
    visit_float(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      std::vector<Acc> ah, bh, at, bt;
      // A plain transpose goes to the GEMM as is; a batch transpose is materialised (with the plain one).
      const Acc* ad = operand<T>(a, trans_batch_a_, pa, ah, at);
      const Acc* bd = operand<T>(b, trans_batch_b_, pb, bh, bt);
      AccOutput<T> out(y);
      matmul_acc<Acc>(g, trans_a_ && !trans_batch_a_ && a.rank() >= 2, trans_b_ && !trans_batch_b_ && b.rank() >= 2,
                      static_cast<Acc>(alpha_), ad, bd, out.data(), math);
      out.finish();
    });
  }

 private:
  static Shape permuted(const Shape& shape, const std::vector<int64_t>& perm) {
    Shape out;
    for (int64_t d : perm) out.push_back(shape[static_cast<size_t>(d)]);
    return out;
  }
  template <class T, class Acc>
  static const Acc* operand(const Tensor& t, bool trans_batch, const std::vector<int64_t>& perm,
                            std::vector<Acc>& holder, std::vector<Acc>& moved) {
    const Acc* data = as_acc<T>(t, holder);
    if (!trans_batch) return data;
    moved.resize(static_cast<size_t>(t.numel()));
    permute_copy(moved.data(), data, sizeof(Acc), t.shape(), perm);
    return moved.data();
  }

  float alpha_;
  bool trans_a_, trans_b_, trans_batch_a_, trans_batch_b_;
};

}  // namespace

MPA_OP_TRAITS("com.microsoft", "FusedMatMul",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("com.microsoft", "FusedMatMul", FusedMatMulOp, 1);

}  // namespace mpa
