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
    RecurrentSteps run(ctx, attrs_, 3);
    const int64_t H = attrs_.hidden;
    Tensor h = run.state(), z = run.state(), candidate = run.state();
    std::optional<Tensor> reset;
    if (!attrs_.linear_before_reset) reset = run.state();
    for (int64_t d = 0; d < attrs_.directions; ++d) {
      run.project(d);
      run.initial(5, d, h);
      const int direction = static_cast<int>(d);
      GruGates gates{run.inputs(d, attrs_.clip),
                     device_data<float>(h),
                     device_data<float>(z),
                     device_data<float>(candidate),
                     reset ? device_data<float>(*reset) : nullptr,
                     attrs_.activation(direction, 0, 2)};
      GruState state{run.inputs(d, attrs_.clip),        device_data<float>(z), device_data<float>(candidate),
                     !attrs_.linear_before_reset,       device_data<float>(h), run.y(),
                     attrs_.activation(direction, 1, 2)};
      for (int64_t s = 0; s < run.steps(); ++s) {
        gates.in.t = state.in.t = run.time(d, s);
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
  GruAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "GRU", GruOp, 1, 3, 7, 14, 22);

}  // namespace mpa::cuda
