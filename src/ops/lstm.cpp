// LSTM: gates i, o, f, c (ONNX order), optional peepholes P (i, o, f), input_forget coupling, over the
// shared recurrent machinery (ops/recurrent.h).
#include <algorithm>

#include "ops/recurrent.h"

namespace mpa {

namespace {

class LstmOp : public OpKernel {
 public:
  explicit LstmOp(const OpInit& init) : attrs_(LstmAttrs::read(init)) {}

  void compute(KernelContext& ctx) const override { run_recurrent_cell(*this, ctx); }

  template <class T>
  void compute_as(KernelContext& ctx) const {
    RecurrentRun<T> run(ctx, attrs_, 4);
    const int64_t H = run.hidden(), B = run.batch();
    const T* peep = ctx.has_input(7) ? ctx.input(7).data<T>() : nullptr;  // shape checked by RecurrentRun
    std::vector<std::vector<T>> final_h(size_t(attrs_.directions)), final_c(size_t(attrs_.directions));
    run.for_each_direction([&](int d) {
      std::vector<T> rec(size_t(B * 4 * H)), gates(size_t(4 * H)), cell_out(static_cast<size_t>(H));
      const RecurrentActivation &f = attrs_.activation(d, 0, 3), &g = attrs_.activation(d, 1, 3),
                                &h = attrs_.activation(d, 2, 3);
      const T* R = run.recurrence(d);
      const T* Rb = run.recurrence_bias(d);
      const T* P = peep ? peep + d * 3 * H : nullptr;
      std::vector<T> hs = run.initial_state(d, 5), cs = run.initial_state(d, 6);
      for (int64_t s = 0; s < run.steps(); ++s) {
        run.times_transposed(hs.data(), R, 4 * H, rec.data());
        for (int64_t b = 0; b < B; ++b) {
          if (s >= run.length(b)) continue;
          const T* x = run.projected(d).data() + (run.time(d, s, b) * B + b) * 4 * H;
          const T* r = rec.data() + b * 4 * H;
          T *hb = hs.data() + b * H, *cb = cs.data() + b * H;
          T *gi = gates.data(), *go = gi + H, *gf = go + H, *gc = gf + H;
          for (int64_t j = 0; j < 4 * H; ++j) gates[size_t(j)] = x[j] + r[j] + Rb[j];
          if (P)
            for (int64_t j = 0; j < H; ++j) gi[j] += P[j] * cb[j], gf[j] += P[2 * H + j] * cb[j];
          f.apply(gi, H, T(attrs_.clip));
          if (attrs_.input_forget) {
            for (int64_t j = 0; j < H; ++j) gf[j] = T(1) - gi[j];
          } else {
            f.apply(gf, H, T(attrs_.clip));
          }
          g.apply(gc, H, T(attrs_.clip));
          for (int64_t j = 0; j < H; ++j) cb[j] = lstm_cell_state(gf[j], cb[j], gi[j], gc[j]);
          if (P)
            for (int64_t j = 0; j < H; ++j) go[j] += P[H + j] * cb[j];
          f.apply(go, H, T(attrs_.clip));
          std::copy(cb, cb + H, cell_out.begin());
          h.apply(cell_out.data(), H, T(0));
          for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * cell_out[size_t(j)];
        }
        run.store_state(hs);
        run.store_state(cs);
        for (int64_t b = 0; b < B; ++b)
          if (s < run.length(b)) run.emit(d, run.time(d, s, b), b, hs.data() + b * H);
      }
      final_h[size_t(d)] = std::move(hs);
      final_c[size_t(d)] = std::move(cs);
    });
    run.write_final(1, final_h);
    run.write_final(2, final_c);
  }

 private:
  LstmAttrs attrs_;
};

}  // namespace

MPA_OP_TRAITS("", "LSTM", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "LSTM", LstmOp, 1, 7, 14, 22);

}  // namespace mpa
