// GRU: gates z, r, h (ONNX order), linear_before_reset either way, over the shared recurrent machinery
// (ops/recurrent.h).
#include "ops/recurrent.h"

namespace mpa {

namespace {

class GruOp : public OpKernel {
 public:
  explicit GruOp(const OpInit& init) : attrs_(GruAttrs::read(init)) {}

  void compute(KernelContext& ctx) const override { run_recurrent_cell(*this, ctx); }

  template <class T>
  void compute_as(KernelContext& ctx) const {
    RecurrentRun<T> run(ctx, attrs_, 3);
    const int64_t H = run.hidden(), B = run.batch();
    std::vector<std::vector<T>> final_h(size_t(attrs_.directions));
    run.for_each_direction([&](int d) {
      std::vector<T> rec(size_t(B * 3 * H)), z(size_t(B * H)), reset(size_t(B * H)), candidate(size_t(B * H));
      const RecurrentActivation &f = attrs_.activation(d, 0, 2), &g = attrs_.activation(d, 1, 2);
      const T* R = run.recurrence(d);
      const T* Rb = run.recurrence_bias(d);
      std::vector<T> hs = run.initial_state(d, 5);
      for (int64_t s = 0; s < run.steps(); ++s) {
        run.times_transposed(hs.data(), R, 3 * H, rec.data());  // H·Rhᵀ too: used when linear_before_reset
        for (int64_t b = 0; b < B; ++b) {
          if (s >= run.length(b)) continue;
          const T* x = run.projected(d).data() + (run.time(d, s, b) * B + b) * 3 * H;
          const T* r = rec.data() + b * 3 * H;
          T *zb = z.data() + b * H, *rb = reset.data() + b * H, *cb = candidate.data() + b * H;
          for (int64_t j = 0; j < H; ++j) zb[j] = x[j] + r[j] + Rb[j], rb[j] = x[H + j] + r[H + j] + Rb[H + j];
          f.apply(zb, H, T(attrs_.clip));
          f.apply(rb, H, T(attrs_.clip));
          // linear_before_reset: r ⊙ (H·Rhᵀ + Rbh); otherwise (r ⊙ H)·Rhᵀ + Rbh, multiplied below.
          if (attrs_.linear_before_reset)
            for (int64_t j = 0; j < H; ++j) cb[j] = rb[j] * (r[2 * H + j] + Rb[2 * H + j]);
          else
            for (int64_t j = 0; j < H; ++j) rb[j] *= hs[size_t(b * H + j)];
        }
        if (!attrs_.linear_before_reset) {
          // r ⊙ H is a GEMM operand: in the storage format, as a GPU's GEMM reads it (and as every other GEMM
          // operand here is).
          run.store_state(reset);
          run.times_transposed(reset.data(), R + 2 * H * H, H, candidate.data());
          for (int64_t i = 0; i < B * H; ++i) candidate[size_t(i)] += Rb[2 * H + i % H];
        }
        for (int64_t b = 0; b < B; ++b) {
          if (s >= run.length(b)) continue;
          const T* x = run.projected(d).data() + (run.time(d, s, b) * B + b) * 3 * H;
          T *zb = z.data() + b * H, *cb = candidate.data() + b * H, *hb = hs.data() + b * H;
          for (int64_t j = 0; j < H; ++j) cb[j] += x[2 * H + j];
          g.apply(cb, H, T(attrs_.clip));
          for (int64_t j = 0; j < H; ++j) hb[j] = gru_hidden(zb[j], cb[j], hb[j]);
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
  GruAttrs attrs_;
};

}  // namespace

MPA_OP_TRAITS("", "GRU", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "GRU", GruOp, 1, 3, 7, 14, 22);

}  // namespace mpa
