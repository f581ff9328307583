// LSTM on CUDA, step by step as ops/lstm.cpp computes it on the CPU: the input projection X·Wᵀ + Wb of all
// steps in one cuBLAS GEMM per direction, then per step the recurrence h·Rᵀ (cuBLAS, the node's operand format
// and compute type) and one thread per (batch row, hidden unit) for the cell (kernels/recurrent.h, the CPU's
// activation functions), the states rounded onto the storage format after every step as on the CPU.
// Attributes and shapes are read and checked as on the CPU (ops/recurrent_attrs.h). sequence_lens makes the
// node run on the CPU (backends/cuda/cuda_backend.cu, declined): its values would have to be read on the host.
#include <optional>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/ops/gemm_call.h"
#include "kernels/recurrent.h"
#include "ops/recurrent_attrs.h"
#include "tensor/formats.h"

namespace mpa::cuda {

namespace {

// Where the values of (direction d, batch row b, unit j) lie in a state input/output and in Y at time t.
struct LstmLayout {
  int64_t seq, batch, hidden, directions;
  bool batch_first;  // layout 1
  __host__ __device__ int64_t state_at(int64_t d, int64_t b, int64_t j) const {
    return (batch_first ? b * directions + d : d * batch + b) * hidden + j;
  }
  __host__ __device__ int64_t y_at(int64_t t, int64_t d, int64_t b, int64_t j) const {
    return (batch_first ? (b * seq + t) * directions + d : (t * directions + d) * batch + b) * hidden + j;
  }
  // The row of X (and of its projection) for time t and batch row b.
  __host__ __device__ int64_t x_row(int64_t t, int64_t b) const { return batch_first ? b * seq + t : t * batch + b; }
};

// One step of direction d: every (b, j) of the batch, reading its projection row at time t.
struct LstmStep {
  LstmLayout layout;
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

void zero(Tensor& t) {
  check(cudaMemsetAsync(t.device_raw(running().device()), 0, t.nbytes(), running().stream()), "cudaMemsetAsync");
}

// Direction d's part of initial_h (input 5) or initial_c (input 6), or zeros, into `state` [batch, hidden].
void initial_state(const KernelContext& ctx, size_t input, const LstmLayout& layout, int64_t d, Tensor& state) {
  if (!ctx.has_input(input)) return zero(state);
  const float* from = device_data<float>(ctx.input(input));
  float* to = device_data<float>(state);
  const int64_t H = layout.hidden;
  for_each_index(state.numel(), [=] __device__(int64_t i) { to[i] = from[layout.state_at(d, i / H, i % H)]; });
}

// `state` [batch, hidden] into direction d's part of Y_h or Y_c.
void copy_state(const Tensor& state, const LstmLayout& layout, int64_t d, Tensor& out) {
  const float* from = device_data<float>(state);
  float* to = device_data<float>(out);
  const int64_t H = layout.hidden;
  for_each_index(state.numel(), [=] __device__(int64_t i) { to[layout.state_at(d, i / H, i % H)] = from[i]; });
}

class LstmOp : public OpKernel {
 public:
  explicit LstmOp(const OpInit& init)
      : attrs_(RecurrentAttrs::read(init, {"Sigmoid", "Tanh", "Tanh"})),
        input_forget_(init.get_int("input_forget", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    if (ctx.input(0).dtype() != DType::Float32)
      fail(ctx.node().label() + ": LSTM on " + dtype_name(ctx.input(0).dtype()) +
           " has no CUDA kernel (float32 only); run it with --device cpu");
    const RecurrentDims dims = RecurrentDims::of(ctx, attrs_, 4, DType::Float32);
    const CudaBackend& backend = running();
    const int64_t S = dims.seq, B = dims.batch, H = attrs_.hidden, D = attrs_.directions, width = 4 * H;
    const LstmLayout layout{S, B, H, D, attrs_.layout == 1};
    const Format storage = value_format(ctx.config(), DType::Float32);
    const GemmMath math = gemm_math(ctx.config(), DType::Float32);
    const Tensor &x = ctx.input(0), &w = ctx.input(1), &r = ctx.input(2);
    const float* bias = ctx.has_input(3) ? device_data<float>(ctx.input(3)) : nullptr;
    Tensor zeros = backend.empty(DType::Float32, {width});
    zero(zeros);

    std::optional<Tensor> y;
    if (ctx.output_requested(0)) zero(*(y = backend.empty(DType::Float32, dims.y_shape(attrs_))));
    Tensor final_h = backend.empty(DType::Float32, dims.state_shape(attrs_));
    Tensor final_c = backend.empty(DType::Float32, dims.state_shape(attrs_));
    Tensor projected = backend.empty(DType::Float32, {S * B, width});
    Tensor recurrent = backend.empty(DType::Float32, {B, width});
    Tensor h = backend.empty(DType::Float32, {B, H}), c = backend.empty(DType::Float32, {B, H});
    for (int64_t d = 0; d < D; ++d) {
      // X·W_dᵀ + Wb_d over the rows of X in its own order (LstmLayout::x_row finds a step's rows).
      if (bias) {
        float* p = device_data<float>(projected);
        const float* wb = bias + d * 2 * width;
        for_each_index(S * B * width, [=] __device__(int64_t i) { p[i] = wb[i % width]; });
      }
      GemmCall projection;
      projection.trans_b = true;
      projection.M = S * B;
      projection.N = width;
      projection.K = dims.input;
      projection.lda = projection.ldb = dims.input;
      projection.ldc = width;
      projection.beta = bias ? 1.0 : 0.0;
      projection.b_offsets = {d * width * dims.input};
      if (projection.M > 0 && projection.K > 0)
        run_gemm(projection, math, x, w, projected);
      else if (!bias)
        zero(projected);
      initial_state(ctx, 5, layout, d, h);
      initial_state(ctx, 6, layout, d, c);
      LstmStep step{layout,
                    d,
                    0,
                    device_data<float>(projected),
                    device_data<float>(recurrent),
                    bias ? bias + d * 2 * width + width : device_data<float>(zeros),
                    ctx.has_input(7) ? device_data<float>(ctx.input(7)) + d * 3 * H : nullptr,
                    device_data<float>(h),
                    device_data<float>(c),
                    y ? device_data<float>(*y) : nullptr,
                    attrs_.activation(static_cast<int>(d), 0, 3),
                    attrs_.activation(static_cast<int>(d), 1, 3),
                    attrs_.activation(static_cast<int>(d), 2, 3),
                    attrs_.clip,
                    input_forget_,
                    storage};
      GemmCall recurrence;
      recurrence.trans_b = true;
      recurrence.M = B;
      recurrence.N = width;
      recurrence.K = H;
      recurrence.lda = recurrence.ldb = H;
      recurrence.ldc = width;
      recurrence.b_offsets = {d * width * H};
      const bool reverse = attrs_.reverse_only || d == 1;
      for (int64_t s = 0; s < S && B > 0; ++s) {
        step.t = reverse ? S - 1 - s : s;
        run_gemm(recurrence, math, h, r, recurrent);
        for_each_index(B * H, step);
      }
      copy_state(h, layout, d, final_h);
      copy_state(c, layout, d, final_c);
    }
    if (y) ctx.set_output(0, std::move(*y));
    if (ctx.output_requested(1)) ctx.set_output(1, std::move(final_h));
    if (ctx.output_requested(2)) ctx.set_output(2, std::move(final_c));
  }

 private:
  RecurrentAttrs attrs_;
  bool input_forget_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "LSTM", LstmOp, 1, 7, 14, 22);

}  // namespace mpa::cuda
