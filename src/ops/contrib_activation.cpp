// com.microsoft activations that onnxruntime's transformer optimizer fuses (contrib ops): Gelu (erf),
// FastGelu (tanh approximation, optional bias), BiasGelu (erf, bias), QuickGelu (x * sigmoid(alpha * x)),
// and BiasAdd (x + bias + skip). The math is the ONNX functors of src/kernels/unary.h; a bias is 1-D over
// the last dimension and is added in the compute type, so 16-bit storage sees one rounding per op.
#include "kernels/unary.h"
#include "ops/elementwise.h"
#include "ops/gelu.h"

namespace mpa {
namespace {

template <class F>
struct AddThenF {
  F f;
  template <class T>
  MPA_HD T operator()(T x, T bias) const {
    return f(x + bias);
  }
};

// A [H] bias over x's last dimension, as onnxruntime requires it.
void check_bias(const Node& node, const Tensor& x, const Tensor& bias) {
  if (!(x.rank() >= 1 && bias.rank() == 1 && bias.dim(0) == x.shape().back() && bias.dtype() == x.dtype()))
    fail(node.label() + ": bias must be " + dtype_name(x.dtype()) + " [" +
         (x.rank() >= 1 ? std::to_string(x.shape().back()) : std::string("?")) + "] (x's last dimension), got " +
         dtype_name(bias.dtype()) + " " + shape_str(bias.shape()));
}

// y = f(x + bias), bias optional (input 1) or required. Under the ORT CUDA profile on fp16 the functor `Half`
// (ops/gelu.h), where ORT's kernel is known to compute in half, replaces f after ORT's half addition of the
// bias; the others (BiasGelu, QuickGelu) keep the generic float math.
struct NoHalfRule {};

template <class F, bool kBiasRequired, class Half = NoHalfRule>
class BiasActivationOp : public OpKernel {
 public:
  explicit BiasActivationOp(const OpInit& init) : f_(make_functor<F>(init)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* bias = kBiasRequired ? &ctx.input(1) : ctx.optional_input(1);
    if (bias) check_bias(ctx.node(), x, *bias);
    visit_types<TypeSet::Float>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      if constexpr (!std::is_same_v<Half, NoHalfRule> && std::is_same_v<compute_t<T>, float>) {
        if (ort_cuda_fp16_rules(ctx.config(), x.dtype())) return run(x, bias, y.data<T>(), Half{});
      }
      run(x, bias, y.data<T>(), f_);
    });
  }

 private:
  template <class T, class G>
  static void run(const Tensor& x, const Tensor* bias, T* y, const G& g) {
    if (bias)
      cpu::map_binary(x.data<T>(), x.shape(), bias->data<T>(), bias->shape(), y, x.shape(),
                      Stored<T, AddThenF<G>>{{g}});
    else
      cpu::map_unary(x.data<T>(), y, x.numel(), Stored<T, G>{g});
  }

  F f_;
};

// The ORT CUDA EP adds FastGelu's bias in half before its half tanh GELU.
struct OrtCudaHalfFastGeluF {
  MPA_HD float operator()(float x) const { return OrtCudaHalfTanhGeluF{}(round_to_format(Format::FP16, x)); }
};

struct ErfGelu : GeluF {};
struct TanhGelu : GeluF {};
struct QuickGeluF : SwishF {};

// Y = X + bias + skip (X and skip [N, S, C], bias [C]), summed left to right in the compute type.
class BiasAddOp : public OpKernel {
 public:
  explicit BiasAddOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    const Tensor& skip = ctx.input(2);
    check_bias(ctx.node(), x, bias);
    if (!(skip.shape() == x.shape() && skip.dtype() == x.dtype()))
      fail(ctx.node().label() + ": skip must have X's type and shape " + shape_str(x.shape()) + ", got " +
           dtype_name(skip.dtype()) + " " + shape_str(skip.shape()));
    visit_types<TypeSet::Float>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      const int64_t C = bias.numel();
      const T *px = x.data<T>(), *pb = bias.data<T>(), *ps = skip.data<T>();
      T* py = y.data<T>();
      parallel_for(x.numel(), 1 << 14, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = store<T>(load(px[i]) + load(pb[i % C]) + load(ps[i]));
      });
    });
  }
};

}  // namespace

template <>
ErfGelu make_functor<ErfGelu>(const OpInit&) {
  return {};
}
template <>
TanhGelu make_functor<TanhGelu>(const OpInit&) {
  TanhGelu f;
  f.tanh_approximation = true;
  return f;
}
template <>
QuickGeluF make_functor<QuickGeluF>(const OpInit& init) {
  QuickGeluF f;
  f.alpha = init.get_float("alpha", 1.702f);
  return f;
}

using GeluKernel = BiasActivationOp<ErfGelu, false, OrtCudaHalfErfGeluF>;
using FastGeluKernel = BiasActivationOp<TanhGelu, false, OrtCudaHalfFastGeluF>;
using BiasGeluKernel = BiasActivationOp<ErfGelu, true>;
using QuickGeluKernel = BiasActivationOp<QuickGeluF, false>;

MPA_OP_TRAITS("com.microsoft", "Gelu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("com.microsoft", "Gelu", GeluKernel, 1);
MPA_OP_TRAITS("com.microsoft", "FastGelu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("com.microsoft", "FastGelu", FastGeluKernel, 1);
MPA_OP_TRAITS("com.microsoft", "BiasGelu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("com.microsoft", "BiasGelu", BiasGeluKernel, 1);
MPA_OP_TRAITS("com.microsoft", "QuickGelu", {.precision = PrecisionClass::Transcendental});
MPA_REGISTER_OP("com.microsoft", "QuickGelu", QuickGeluKernel, 1);
MPA_OP_TRAITS("com.microsoft", "BiasAdd", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("com.microsoft", "BiasAdd", BiasAddOp, 1);

}  // namespace mpa
