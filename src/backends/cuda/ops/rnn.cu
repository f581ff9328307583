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
    RecurrentSteps steps(ctx, attrs_, 1);
    Tensor h = steps.state();
    steps.each_step(h, nullptr, [&](int64_t d, int64_t t) {
      const RnnStep cell{steps.inputs(d, t, attrs_.clip), device_data<float>(h), steps.y(),
                         attrs_.activation(static_cast<int>(d), 0, 1)};
      steps.recur(d, h);
      for_each_index(h.numel(), cell);
    });
  }

 private:
  RecurrentAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "RNN", RnnOp, 1, 7, 14, 22);

}  // namespace mpa::cuda
