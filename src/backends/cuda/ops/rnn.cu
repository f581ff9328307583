// RNN on CUDA, as ops/rnn.cpp computes it on the CPU: H = f(X·Wᵀ + Wb + H·Rᵀ + Rb) per step, over the recurrent
// ops' shared steps (ops/recurrent_steps.cuh), one thread per (batch row, hidden unit) (RnnStep,
// ops/recurrent_cells.h), the state rounded onto the storage format after every step.
#include "backends/cuda/ops/recurrent_steps.cuh"

namespace mpa::cuda {

namespace {

class RnnOp : public OpKernel {
 public:
  explicit RnnOp(const OpInit& init) : attrs_(RecurrentAttrs::read(init, {"Tanh"})) {}

  void compute(KernelContext& ctx) const override {
    RecurrentSteps run(ctx, attrs_, 1);
    Tensor h = run.state();
    for (int64_t d = 0; d < attrs_.directions; ++d) {
      run.project(d);
      run.initial(5, d, h);
      RnnStep step{run.inputs(d, attrs_.clip), device_data<float>(h), run.y(),
                   attrs_.activation(static_cast<int>(d), 0, 1)};
      run.run_direction(d, h, step);
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
