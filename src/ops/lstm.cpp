// LSTM: gates i, o, f, c (ONNX order), optional peepholes P (i, o, f), input_forget coupling, over the
// shared recurrent machinery (ops/recurrent.h).
#include "ops/recurrent.h"

namespace mpa {

namespace {

class LstmOp : public OpKernel {
 public:
  explicit LstmOp(const OpInit& init)
      : attrs_(RecurrentAttrs::read(init, {"Sigmoid", "Tanh", "Tanh"})), input_forget_(init.get_int("input_forget", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    RecurrentRun run(ctx, attrs_, 4);
    const int64_t H = run.hidden(), B = run.batch();
    const float* peep = nullptr;
    if (ctx.has_input(7)) {
      const Tensor& p = ctx.input(7);
      if (p.shape() != Shape{attrs_.directions, 3 * H} || p.dtype() != DType::Float32)
        fail(ctx.node().label() + ": P has shape " + shape_str(p.shape()) + ", expected " +
             shape_str({attrs_.directions, 3 * H}));
      peep = p.data<float>();
    }
    std::vector<std::vector<float>> final_h, final_c;
    std::vector<float> rec(size_t(B * 4 * H));
    for (int d = 0; d < attrs_.directions; ++d) {
      const RecurrentActivation &f = attrs_.activation(d, 0, 3), &g = attrs_.activation(d, 1, 3), &h = attrs_.activation(d, 2, 3);
      const float* R = run.recurrence(d);
      const float* Rb = run.recurrence_bias(d);
      const float* P = peep ? peep + d * 3 * H : nullptr;
      std::vector<float> hs = run.initial_state(d, 5), cs = run.initial_state(d, 6);
      for (int64_t s = 0; s < run.steps(); ++s) {
        run.times_transposed(hs.data(), R, 4 * H, rec.data());
        for (int64_t b = 0; b < B; ++b) {
          if (s >= run.length(b)) continue;
          const int64_t t = run.time(d, s, b);
          const float* x = run.projected(d).data() + (t * B + b) * 4 * H;
          const float* r = rec.data() + b * 4 * H;
          float* hb = hs.data() + b * H;
          float* cb = cs.data() + b * H;
          for (int64_t j = 0; j < H; ++j) {
            const float c_prev = cb[j];
            float gi = x[j] + r[j] + Rb[j], gf = x[2 * H + j] + r[2 * H + j] + Rb[2 * H + j];
            if (P) gi += P[j] * c_prev, gf += P[2 * H + j] * c_prev;
            const float i = f(attrs_.clipped(gi));
            const float forget = input_forget_ ? 1.f - i : f(attrs_.clipped(gf));
            const float candidate = g(attrs_.clipped(x[3 * H + j] + r[3 * H + j] + Rb[3 * H + j]));
            const float c = forget * c_prev + i * candidate;
            float go = x[H + j] + r[H + j] + Rb[H + j];
            if (P) go += P[H + j] * c;
            cb[j] = c;
            hb[j] = f(attrs_.clipped(go)) * h(c);
          }
        }
        run.store_state(hs);
        run.store_state(cs);
        for (int64_t b = 0; b < B; ++b)
          if (s < run.length(b)) run.emit(d, run.time(d, s, b), b, hs.data() + b * H);
      }
      final_h.push_back(std::move(hs));
      final_c.push_back(std::move(cs));
    }
    run.write_final(1, final_h);
    run.write_final(2, final_c);
  }

 private:
  RecurrentAttrs attrs_;
  bool input_forget_;
};

}  // namespace

MPA_REGISTER_OP("", "LSTM", LstmOp, 1, 7, 14, 22);

}  // namespace mpa
