// CausalConvWithState (opset 27): a causal depthwise 1-D convolution whose left context is the previous
// call's last k-1 positions (past_state; zeros when omitted), with an optional fused SiLU ("silu" and its
// alias "swish"). Returns the output and the new context: the last k-1 positions of past_state ++ input.
//
// Math follows the spec's function body: each tap sum (plus bias) accumulates in float and is stored in
// T, and SiLU then runs in float on that stored value and is stored again. The stored intermediate is what
// the decomposition (Conv, Cast, Sigmoid, Mul) keeps between nodes, so it is rounded to the format T's
// values lie on.
#include "kernels/unary.h"
#include "ops/compute_buffer.h"
#include "ops/op.h"

namespace mpa {
namespace {

bool read_silu(const OpInit& init) {
  const std::string activation = init.get_string("activation", "none");
  if (activation == "silu" || activation == "swish") return true;
  if (activation == "none") return false;
  fail(init.node().label() + ": activation '" + activation + "' is not one of 'none', 'silu', 'swish'");
}

class CausalConvWithStateOp : public OpKernel {
 public:
  explicit CausalConvWithStateOp(const OpInit& init) : silu_(read_silu(init)) {}

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* bias = ctx.optional_input(2);
    const Tensor* past = ctx.optional_input(3);
    if (x.rank() != 3) fail(label + ": input must be rank 3 (batch, channels, length), got " + shape_str(x.shape()));
    const int64_t B = x.dim(0), C = x.dim(1), L = x.dim(2);
    if (!(w.rank() == 3 && w.dim(0) == C && w.dim(1) == 1 && w.dim(2) >= 1))
      fail(label + ": weight must be (" + std::to_string(C) + ", 1, k) with k >= 1, got " + shape_str(w.shape()));
    const int64_t k = w.dim(2), context = k - 1;
    if (bias && bias->shape() != Shape{C})
      fail(label + ": bias must be (" + std::to_string(C) + "), got " + shape_str(bias->shape()));
    if (past && past->shape() != Shape{B, C, context})
      fail(label + ": past_state must be " + shape_str({B, C, context}) + ", got " + shape_str(past->shape()));
    for (const Tensor* t : {&w, bias, past})
      if (t && t->dtype() != x.dtype())
        fail(label + ": inputs are " + dtype_name(x.dtype()) + " and " + dtype_name(t->dtype()) +
             ", expected one type");
    if (!(x.dtype() == DType::Float32 || x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16))
      fail(label + ": element type " + dtype_name(x.dtype()) + " is not allowed (float, float16, bfloat16)");
    const Format stored = value_format(ctx.config(), x.dtype());
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    Tensor& present = ctx.allocate_output(1, x.dtype(), {B, C, context});
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const T* in = x.data<T>();
      const T* weights = w.data<T>();
      const T* b = bias ? bias->data<T>() : nullptr;
      const T* prev = past ? past->data<T>() : nullptr;
      T* out = y.data<T>();
      T* next = present.data<T>();
      parallel_for(B * C, std::max<int64_t>(1, 4096 / std::max<int64_t>(L * k, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t c = row % C;
          const T* row_in = in + row * L;
          const T* row_prev = prev ? prev + row * context : nullptr;
          // Position p of past_state ++ input (length context + L).
          auto padded = [&](int64_t p) -> A {
            if (p >= context) return load(row_in[p - context]);
            return row_prev ? A(load(row_prev[p])) : A(0);
          };
          for (int64_t l = 0; l < L; ++l) {
            A sum = 0;
            for (int64_t j = 0; j < k; ++j) sum += A(load(weights[c * k + j])) * padded(l + j);
            if (b) sum += A(load(b[c]));
            if (silu_) sum = SwishF{}(A(round_to_format(stored, sum)));
            out[row * L + l] = store<T>(sum);
          }
          for (int64_t i = 0; i < context; ++i) next[row * context + i] = store<T>(padded(L + i));
        }
      });
    });
  }

 private:
  bool silu_;
};

}  // namespace

// A GPU kernel (Mamba's causal_conv1d, the function body's Conv) sums the k taps in fp32.
MPA_OP_TRAITS("", "CausalConvWithState", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "CausalConvWithState", CausalConvWithStateOp, 27);

}  // namespace mpa
