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
    RecurrentSteps steps(ctx, attrs_, 4);
    Tensor h = steps.state(), c = steps.state();
    steps.each_step(h, &c, [&](int64_t d, int64_t t) {
      const int direction = static_cast<int>(d);
      const LstmStep cell{steps.inputs(d, t, attrs_.clip),
                          ctx.has_input(7) ? device_data<float>(ctx.input(7)) + d * 3 * attrs_.hidden : nullptr,
                          device_data<float>(h),
                          device_data<float>(c),
                          steps.y(),
                          attrs_.activation(direction, 0, 3),
                          attrs_.activation(direction, 1, 3),
                          attrs_.activation(direction, 2, 3),
                          attrs_.input_forget};
      steps.recur(d, h);
      for_each_index(h.numel(), cell);
    });
  }

 private:
  LstmAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "LSTM", LstmOp, 1, 7, 14, 22);

}  // namespace mpa::cuda
