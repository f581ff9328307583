// LRN (1, 13): local response normalisation across channels of [N, C, D1..Dk]:
// y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
// Squares are summed in compute_t (float for 16-bit inputs), one rounding per output.
#include <cmath>

#include "common/parallel.h"
#include "ops/op.h"
#include "ops/shape_helpers.h"

namespace mpa {
namespace {

class LrnOp : public OpKernel {
 public:
  explicit LrnOp(const OpInit& init)
      : alpha_(init.get_float("alpha", 1e-4f)),
        beta_(init.get_float("beta", 0.75f)),
        bias_(init.get_float("bias", 1.0f)),
        size_(init.require_int("size")) {
    if (size_ < 1) fail(init.node().label() + ": size must be >= 1, got " + std::to_string(size_));
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 3) fail(ctx.node().label() + ": input must be [N, C, D1..Dk], got " + shape_str(x.shape()));
    const int64_t channels = x.shape()[1];
    const int64_t inner = x.numel() / std::max<int64_t>(x.shape()[0] * channels, 1);
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const A alpha = static_cast<A>(alpha_) / static_cast<A>(size_), beta = static_cast<A>(beta_),
              bias = static_cast<A>(bias_);
      parallel_for(x.numel(), std::max<int64_t>(1, 16384 / size_), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t c = i / inner % channels, plane = i - c * inner;  // plane: element i at channel 0
          A sum = A(0);
          for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(channels - 1, c + after); ++k) {
            const A v = load(in[plane + k * inner]);
            sum += v * v;
          }
          out[i] = store<T>(static_cast<A>(load(in[i])) / std::pow(bias + alpha * sum, beta));
        }
      });
    });
  }

 private:
  float alpha_, beta_, bias_;
  int64_t size_;
};

}  // namespace

MPA_OP_TRAITS("", "LRN", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "LRN", LrnOp, 1, 13);

}  // namespace mpa
