// GRU on CUDA, as ops/gru.cpp computes it on the CPU, over the recurrent ops' shared steps
// (ops/recurrent_steps.cuh): per step the recurrence H·Rᵀ of all three gates on cuBLAS, one thread per (batch
// row, hidden unit) for the update and reset gates, then (linear_before_reset 0) the reset-gated state r ⊙ H,
// in the storage format, through a second GEMM with Rh, and one thread per unit for the candidate and the new
// state (GruGates and GruState, ops/recurrent_cells.h, over kernels/recurrent.h), rounded onto the storage format
// after every step.
#include "backends/cuda/ops/recurrent_steps.cuh"

namespace mpa::cuda {

namespace {

class GruOp : public OpKernel {
 public:
  explicit GruOp(const OpInit& init) : attrs_(GruAttrs::read(init)) {}

  void compute(KernelContext& ctx) const override {
    RecurrentSteps steps(ctx, attrs_, 3);
    const int64_t H = attrs_.hidden;
    Tensor h = steps.state(), z = steps.state(), candidate = steps.state();
    std::optional<Tensor> reset;
    if (!attrs_.linear_before_reset) reset = steps.state();
    steps.each_step(h, nullptr, [&](int64_t d, int64_t t) {
      const int direction = static_cast<int>(d);
      const StepInputs in = steps.inputs(d, t, attrs_.clip);
      const GruGates gates{in,
                           device_data<float>(h),
                           device_data<float>(z),
                           device_data<float>(candidate),
                           reset ? device_data<float>(*reset) : nullptr,
                           attrs_.activation(direction, 0, 2)};
      const GruState state{in,
                           device_data<float>(z),
                           device_data<float>(candidate),
                           !attrs_.linear_before_reset,
                           device_data<float>(h),
                           steps.y(),
                           attrs_.activation(direction, 1, 2)};
      steps.recur(d, h);
      for_each_index(h.numel(), gates);
      if (reset) steps.recur(d, *reset, 2 * H, H, candidate);
      for_each_index(h.numel(), state);
    });
  }

 private:
  GruAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "GRU", GruOp, 1, 3, 7, 14, 22);

}  // namespace mpa::cuda
