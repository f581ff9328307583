// GRU on CUDA, as ops/gru.cpp computes it on the CPU, over the recurrent ops' shared steps
// (ops/recurrent_steps.cuh): per step the recurrence H·Rᵀ of all three gates on cuBLAS, one thread per (batch
// row, hidden unit) for the update and reset gates, then (linear_before_reset 0) the reset-gated state r ⊙ H,
// in the storage format, through a second GEMM with Rh, and one thread per unit for the candidate and the new
// state (kernels/recurrent.h), rounded onto the storage format after every step.
#include "backends/cuda/ops/recurrent_steps.cuh"

namespace mpa::cuda {

namespace {

// z and r; the candidate's recurrent term r ⊙ (H·Rhᵀ + Rbh) (linear_before_reset), or r ⊙ H for its GEMM.
struct GruGates {
  RecurrentLayout layout;
  int64_t t;
  const float *projected, *recurrent, *recurrence_bias, *h;
  float *z, *candidate, *reset;  // reset: null when linear_before_reset
  RecurrentActivation f;
  float clip;
  Format storage;

  __device__ void operator()(int64_t i) const {
    const int64_t H = layout.hidden, b = i / H, j = i % H;
    const float* x = projected + layout.x_row(t, b) * 3 * H;
    const float* r = recurrent + b * 3 * H;
    z[i] = f(x[j] + r[j] + recurrence_bias[j], clip);
    const float gate = f(x[H + j] + r[H + j] + recurrence_bias[H + j], clip);
    if (reset) {
      const float gated = gate * h[i];
      reset[i] = storage != Format::FP32 ? round_to_format(storage, gated) : gated;
    } else {
      candidate[i] = gate * (r[2 * H + j] + recurrence_bias[2 * H + j]);
    }
  }
};

// The candidate (+ Rbh after its GEMM when not linear_before_reset, then + the input projection), g, the new H.
struct GruState {
  RecurrentLayout layout;
  int64_t d, t;
  const float *projected, *recurrence_bias, *z, *candidate;
  bool candidate_needs_bias;
  float *h, *y;  // y: null when not requested
  RecurrentActivation g;
  float clip;
  Format storage;

  __device__ void operator()(int64_t i) const {
    const int64_t H = layout.hidden, b = i / H, j = i % H;
    float c = candidate[i];
    if (candidate_needs_bias) c += recurrence_bias[2 * H + j];
    c = g(c + projected[layout.x_row(t, b) * 3 * H + 2 * H + j], clip);
    float hidden = gru_hidden(z[i], c, h[i]);
    if (storage != Format::FP32) hidden = round_to_format(storage, hidden);
    h[i] = hidden;
    if (y) y[layout.y_at(t, d, b, j)] = hidden;
  }
};

class GruOp : public OpKernel {
 public:
  explicit GruOp(const OpInit& init)
      : attrs_(RecurrentAttrs::read(init, {"Sigmoid", "Tanh"})),
        linear_before_reset_(init.get_int("linear_before_reset", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    RecurrentSteps run(ctx, attrs_, 3);
    const int64_t H = attrs_.hidden;
    Tensor h = run.state(), z = run.state(), candidate = run.state();
    std::optional<Tensor> reset;
    if (!linear_before_reset_) reset = run.state();
    for (int64_t d = 0; d < attrs_.directions; ++d) {
      run.project(d);
      run.initial(5, d, h);
      const int direction = static_cast<int>(d);
      GruGates gates{run.layout(),
                     0,
                     run.projected(),
                     run.recurrent(),
                     run.recurrence_bias(d),
                     device_data<float>(h),
                     device_data<float>(z),
                     device_data<float>(candidate),
                     reset ? device_data<float>(*reset) : nullptr,
                     attrs_.activation(direction, 0, 2),
                     attrs_.clip,
                     run.storage()};
      GruState state{run.layout(),
                     d,
                     0,
                     run.projected(),
                     run.recurrence_bias(d),
                     device_data<float>(z),
                     device_data<float>(candidate),
                     !linear_before_reset_,
                     device_data<float>(h),
                     run.y(),
                     attrs_.activation(direction, 1, 2),
                     attrs_.clip,
                     run.storage()};
      for (int64_t s = 0; s < run.steps(); ++s) {
        gates.t = state.t = run.time(d, s);
        run.recur(d, h);
        for_each_index(h.numel(), gates);
        if (reset) run.recur(d, *reset, 2 * H, H, candidate);
        for_each_index(h.numel(), state);
      }
      run.final(1, d, h);
    }
    run.finish();
  }

 private:
  RecurrentAttrs attrs_;
  bool linear_before_reset_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "GRU", GruOp, 1, 3, 7, 14, 22);

}  // namespace mpa::cuda
