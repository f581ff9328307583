// Identity and Dropout: in inference both pass their input through (aliased, no copy).
#include <random>

#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

class IdentityOp : public OpKernel {
 public:
  explicit IdentityOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    if (const ValuePtr& value = ctx.value_input(0))
      ctx.set_value_output(0, value);
    else
      ctx.set_output(0, ctx.input(0));
  }
};
MPA_OP_TRAITS(
    "", "Identity",
    {.rounding_commutes = true, .moves_values_only = true, .precision = PrecisionClass::Exact, .shape_only = true});
MPA_REGISTER_OP("", "Identity", IdentityOp, 1, 13, 14, 16, 19, 21, 23, 24, 25);

// Before opset 12 the ratio is an attribute and the op always runs in inference here (is_test only
// chose training in opsets 1 and 6, which no exported inference model sets). Since 12, ratio and
// training_mode are optional inputs. Training mode draws the keep mask from MT19937 seeded with the
// `seed` attribute (0 when absent) as uniform doubles in numpy's random_sample layout, so results are
// reproducible and match the ONNX reference, which uses numpy's legacy generator.
class DropoutOp : public OpKernel {
 public:
  explicit DropoutOp(const OpInit& init)
      : opset_(init.opset()), ratio_attr_(init.get_float("ratio", 0.5f)), seed_(init.get_int("seed", 0)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Node& node = ctx.node();
    if (!dtype_is_float(x.dtype()))
      fail(node.label() + ": expects a floating-point input, got " + dtype_name(x.dtype()));
    double ratio = ratio_attr_;
    bool training = false;
    if (opset_ >= 12) {
      if (const Tensor* r = ctx.optional_input(1)) {
        if (r->numel() != 1) fail(node.label() + ": ratio must be a scalar, got shape " + shape_str(r->shape()));
        ratio = r->to_double_vector()[0];
      }
      if (const Tensor* t = ctx.optional_input(2)) training = scalar_int(node, *t, "training_mode") != 0;
    }
    const bool want_mask = ctx.num_outputs() > 1 && ctx.output_requested(1);
    const DType mask_type = opset_ >= 10 ? DType::Bool : x.dtype();
    if (!training || ratio == 0) {
      ctx.set_output(0, x);
      if (want_mask) fill_mask_ones(allocate_checked(ctx, 1, mask_type, x.shape()));
      return;
    }
    if (!(ratio >= 0 && ratio < 1)) fail(node.label() + ": ratio " + std::to_string(ratio) + " is outside [0, 1)");
    std::vector<bool> keep(static_cast<size_t>(x.numel()));
    std::mt19937 gen(static_cast<uint32_t>(seed_));
    for (size_t i = 0; i < keep.size(); ++i) {
      const uint32_t a = gen() >> 5, b = gen() >> 6;
      const double u = (a * 67108864.0 + b) / 9007199254740992.0;
      keep[i] = u >= ratio;
    }
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const C scale = C(1) / (C(1) - static_cast<C>(ratio));
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (size_t i = 0; i < keep.size(); ++i) out[i] = keep[i] ? store<T>(load(in[i]) * scale) : store<T>(C(0));
    });
    if (want_mask) {
      Tensor& mask = allocate_checked(ctx, 1, mask_type, x.shape());
      visit_dtype(mask_type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* m = mask.data<T>();
        for (size_t i = 0; i < keep.size(); ++i) m[i] = store<T>(static_cast<compute_t<T>>(keep[i] ? 1 : 0));
      });
    }
  }

 private:
  static void fill_mask_ones(Tensor& mask) {
    visit_dtype(mask.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T one = store<T>(static_cast<compute_t<T>>(1));
      fill_elements(mask.raw(), mask.numel(), &one, sizeof(T));
    });
  }
  int64_t opset_;
  float ratio_attr_;
  int64_t seed_;
};
MPA_OP_TRAITS("", "Dropout", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Dropout", DropoutOp, 1, 6, 7, 10, 12, 13, 22);

}  // namespace mpa
