// RNN on CUDA, as ops/rnn.cpp computes it on the CPU: H = f(X·Wᵀ + Wb + H·Rᵀ + Rb) per step, over the recurrent
// ops' shared steps (ops/recurrent_steps.cuh), one thread per (batch row, hidden unit), the state rounded onto
// the storage format after every step.
#include "backends/cuda/ops/recurrent_steps.cuh"

namespace mpa::cuda {

namespace {

struct RnnStep {
  RecurrentLayout layout;
  int64_t d, t;
  const float *projected, *recurrent, *recurrence_bias;
  float *h, *y;  // y: null when not requested
  RecurrentActivation f;
  float clip;
  Format storage;

  __device__ void operator()(int64_t i) const {
    const int64_t H = layout.hidden, b = i / H, j = i % H;
    float hidden = f(projected[layout.x_row(t, b) * H + j] + recurrent[i] + recurrence_bias[j], clip);
    if (storage != Format::FP32) hidden = round_to_format(storage, hidden);
    h[i] = hidden;
    if (y) y[layout.y_at(t, d, b, j)] = hidden;
  }
};

class RnnOp : public OpKernel {
 public:
  explicit RnnOp(const OpInit& init) : attrs_(RecurrentAttrs::read(init, {"Tanh"})) {}

  void compute(KernelContext& ctx) const override {
    RecurrentSteps run(ctx, attrs_, 1);
    Tensor h = run.state();
    for (int64_t d = 0; d < attrs_.directions; ++d) {
      run.project(d);
      run.initial(5, d, h);
      RnnStep step{run.layout(),
                   d,
                   0,
                   run.projected(),
                   run.recurrent(),
                   run.recurrence_bias(d),
                   device_data<float>(h),
                   run.y(),
                   attrs_.activation(static_cast<int>(d), 0, 1),
                   attrs_.clip,
                   run.storage()};
      for (int64_t s = 0; s < run.steps(); ++s) {
        step.t = run.time(d, s);
        run.recur(d, h);
        for_each_index(h.numel(), step);
      }
      run.final(1, d, h);
    }
    run.finish();
  }

 private:
  RecurrentAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "RNN", RnnOp, 1, 7, 14, 22);

}  // namespace mpa::cuda
