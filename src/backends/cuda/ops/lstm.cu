// LSTM on CUDA, step by step as ops/lstm.cpp computes it on the CPU, over the recurrent ops' shared steps
// (ops/recurrent_steps.cuh): per step the recurrence h·Rᵀ on cuBLAS, then one thread per (batch row, hidden
// unit) for the cell (LstmStep, ops/recurrent_cells.h, over kernels/recurrent.h: the CPU's activation functions
// and cell update), the states rounded onto the storage format after every step as on the CPU.
#include "backends/cuda/ops/recurrent_steps.cuh"

namespace mpa::cuda {

namespace {

class LstmOp : public OpKernel {
 public:
  explicit LstmOp(const OpInit& init) : attrs_(LstmAttrs::read(init)) {}

  void compute(KernelContext& ctx) const override {
    RecurrentSteps run(ctx, attrs_, 4);
    Tensor h = run.state(), c = run.state();
    for (int64_t d = 0; d < attrs_.directions; ++d) {
      run.project(d);
      run.initial(5, d, h);
      run.initial(6, d, c);
      const int direction = static_cast<int>(d);
      LstmStep step{run.inputs(d, attrs_.clip),
                    ctx.has_input(7) ? device_data<float>(ctx.input(7)) + d * 3 * attrs_.hidden : nullptr,
                    device_data<float>(h),
                    device_data<float>(c),
                    run.y(),
                    attrs_.activation(direction, 0, 3),
                    attrs_.activation(direction, 1, 3),
                    attrs_.activation(direction, 2, 3),
                    attrs_.input_forget};
      run.run_direction(d, h, step);
      run.final(1, d, h);
      run.final(2, d, c);
    }
    run.finish();
  }

 private:
  LstmAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "LSTM", LstmOp, 1, 7, 14, 22);

}  // namespace mpa::cuda
