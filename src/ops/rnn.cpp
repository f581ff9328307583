// RNN: H = f(X·Wᵀ + H·Rᵀ + Wb + Rb), over the shared recurrent machinery (ops/recurrent.h).
#include "ops/recurrent.h"

namespace mpa {

namespace {

class RnnOp : public OpKernel {
 public:
  explicit RnnOp(const OpInit& init) : attrs_(RecurrentAttrs::read(init, {"Tanh"})) {}

  void compute(KernelContext& ctx) const override { run_recurrent_cell(*this, ctx); }

  template <class T>
  void compute_as(KernelContext& ctx) const {
    RecurrentRun<T> run(ctx, attrs_, 1);
    const int64_t H = run.hidden(), B = run.batch();
    std::vector<std::vector<T>> final_h(size_t(attrs_.directions));
    run.for_each_direction([&](int d) {
      std::vector<T> rec(size_t(B * H));
      const RecurrentActivation& f = attrs_.activation(d, 0, 1);
      const T* Rb = run.recurrence_bias(d);
      std::vector<T> hs = run.initial_state(d, 5);
      for (int64_t s = 0; s < run.steps(); ++s) {
        run.times_transposed(hs.data(), run.recurrence(d), H, rec.data());
        for (int64_t b = 0; b < B; ++b) {
          if (s >= run.length(b)) continue;
          const T* x = run.projected(d).data() + (run.time(d, s, b) * B + b) * H;
          T* hb = hs.data() + b * H;
          for (int64_t j = 0; j < H; ++j) hb[j] = x[j] + rec[size_t(b * H + j)] + Rb[j];
          f.apply(hb, H, T(attrs_.clip));
        }
        run.store_state(hs);
        for (int64_t b = 0; b < B; ++b)
          if (s < run.length(b)) run.emit(d, run.time(d, s, b), b, hs.data() + b * H);
      }
      final_h[size_t(d)] = std::move(hs);
    });
    run.write_final(1, final_h);
  }

 private:
  RecurrentAttrs attrs_;
};

}  // namespace

MPA_OP_TRAITS("", "RNN", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "RNN", RnnOp, 1, 7, 14, 22);

}  // namespace mpa
