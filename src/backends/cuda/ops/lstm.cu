// LSTM on CUDA, step by step as ops/lstm.cpp computes it on the CPU, over the recurrent ops' shared steps
// (ops/recurrent_steps.cuh): per step the recurrence h·Rᵀ on cuBLAS, then one thread per (batch row, hidden
// unit) for the cell (kernels/recurrent.h: the CPU's activation functions and cell update), the states rounded
// onto the storage format after every step as on the CPU.
#include "backends/cuda/ops/recurrent_steps.cuh"

namespace mpa::cuda {

namespace {

// One step of direction d at time t: every (b, j) of the batch.
struct LstmStep {
  RecurrentLayout layout;
  int64_t d, t;
  const float *projected, *recurrent, *recurrence_bias, *peepholes;  // peepholes: null when absent
  float *h, *c, *y;                                                  // y: null when not requested
  RecurrentActivation f, g, act_h;
  float clip;
  bool input_forget;
  Format storage;

  __device__ void operator()(int64_t i) const {
    const int64_t H = layout.hidden, b = i / H, j = i % H;
    const float* x = projected + layout.x_row(t, b) * 4 * H;
    const float* r = recurrent + b * 4 * H;
    const auto pre = [&](int64_t gate) { return x[gate * H + j] + r[gate * H + j] + recurrence_bias[gate * H + j]; };
    LstmPeepholes p;
    if (peepholes) p = {true, peepholes[j], peepholes[H + j], peepholes[2 * H + j]};
    float cell = c[i];
    float hidden = lstm_cell(pre(0), pre(1), pre(2), pre(3), p, cell, input_forget, f, g, act_h, clip);
    if (storage != Format::FP32) cell = round_to_format(storage, cell), hidden = round_to_format(storage, hidden);
    c[i] = cell;
    h[i] = hidden;
    if (y) y[layout.y_at(t, d, b, j)] = hidden;
  }
};

class LstmOp : public OpKernel {
 public:
  explicit LstmOp(const OpInit& init)
      : attrs_(RecurrentAttrs::read(init, {"Sigmoid", "Tanh", "Tanh"})),
        input_forget_(init.get_int("input_forget", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    RecurrentSteps run(ctx, attrs_, 4);
    const int64_t H = attrs_.hidden;
    Tensor h = run.state(), c = run.state();
    for (int64_t d = 0; d < attrs_.directions; ++d) {
      run.project(d);
      run.initial(5, d, h);
      run.initial(6, d, c);
      const int direction = static_cast<int>(d);
      LstmStep step{run.layout(),
                    d,
                    0,
                    run.projected(),
                    run.recurrent(),
                    run.recurrence_bias(d),
                    ctx.has_input(7) ? device_data<float>(ctx.input(7)) + d * 3 * H : nullptr,
                    device_data<float>(h),
                    device_data<float>(c),
                    run.y(),
                    attrs_.activation(direction, 0, 3),
                    attrs_.activation(direction, 1, 3),
                    attrs_.activation(direction, 2, 3),
                    attrs_.clip,
                    input_forget_,
                    run.storage()};
      for (int64_t s = 0; s < run.steps(); ++s) {
        step.t = run.time(d, s);
        run.recur(d, h);
        for_each_index(h.numel(), step);
      }
      run.final(1, d, h);
      run.final(2, d, c);
    }
    run.finish();
  }

 private:
  RecurrentAttrs attrs_;
  bool input_forget_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "LSTM", LstmOp, 1, 7, 14, 22);

}  // namespace mpa::cuda
