// What the recurrent ops' CUDA kernels share (ops/lstm.cu, gru.cu, rnn.cu), as ops/recurrent.h is for the
// CPU's: the node's float32 inputs checked (ops/recurrent_attrs.h), Y zeroed, the input projection X·Wᵀ + Wb
// of all steps in one cuBLAS GEMM per direction, each step's recurrence state·Rᵀ with the node's GEMM math
// (backends/cuda/math_modes.h), the initial and final states. The cells are ops/recurrent_cells.h; each op's
// file holds its kernel class.
// float32 only (an fp64 reference runs on the CPU); sequence_lens keeps the node on the CPU
// (backends/cuda/cuda_backend.cu, declined): its lengths would have to be read on the host.
#pragma once
#include <optional>
#include <string>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/ops/cublas_gemm.h"
#include "backends/cuda/ops/recurrent_cells.h"
#include "kernels/recurrent.h"
#include "ops/recurrent_attrs.h"
#include "tensor/formats.h"

namespace mpa::cuda {

// Internal to each op's translation unit: its device lambdas and kernels are its own.
namespace {

inline void zero(Tensor& t) {
  check(cudaMemsetAsync(t.device_raw(running().device()), 0, t.nbytes(), running().stream()), "cudaMemsetAsync");
}

// One node's run: its inputs, the buffers every cell reads and writes, and Y.
class RecurrentSteps {
 public:
  RecurrentSteps(KernelContext& ctx, const RecurrentAttrs& attrs, int64_t gates)
      : ctx_(ctx), attrs_(attrs), gates_(gates) {
    if (ctx.input(0).dtype() != DType::Float32)
      fail(ctx.node().label() + ": " + ctx.node().op_type + " on " + dtype_name(ctx.input(0).dtype()) +
           " has no CUDA kernel (float32 only); run it with --device cpu");
    dims_ = RecurrentDims::of(ctx, attrs, gates, DType::Float32);
    const CudaBackend& backend = running();
    layout_ = dims_.layout(attrs);
    storage_ = value_format(ctx.config(), DType::Float32);
    math_ = gemm_math(ctx.config(), DType::Float32);
    bias_ = ctx.has_input(3) ? device_data<float>(ctx.input(3)) : nullptr;
    if (ctx.output_requested(0)) zero(*(y_ = backend.empty(DType::Float32, dims_.y_shape(attrs))));
    projected_ = backend.empty(DType::Float32, {dims_.seq * dims_.batch, width()});
    recurrent_ = backend.empty(DType::Float32, {dims_.batch, width()});
  }

  // The step inputs of direction d at time t.
  StepInputs inputs(int64_t d, int64_t t, float clip) const {
    return {layout_,
            gates_,
            d,
            t,
            device_data<float>(projected_),
            device_data<float>(recurrent_),
            bias_ ? bias_ + d * 2 * width() + width() : nullptr,
            clip,
            storage_};
  }
  float* y() { return y_ ? device_data<float>(*y_) : nullptr; }
  int64_t width() const { return gates_ * attrs_.hidden; }
  // A [batch, hidden] buffer.
  Tensor state() const { return running().empty(DType::Float32, {dims_.batch, attrs_.hidden}); }

  // projected = X·W_dᵀ + Wb_d over the rows of X in its own order (RecurrentLayout::x_row finds a step's rows).
  void project(int64_t d) {
    const int64_t rows = dims_.seq * dims_.batch, w = width();
    if (bias_) {
      float* p = device_data<float>(projected_);
      const float* wb = bias_ + d * 2 * w;
      for_each_index(rows * w, [=] __device__(int64_t i) { p[i] = wb[i % w]; });
    } else if (dims_.input == 0) {
      zero(projected_);
    }
    if (rows == 0 || dims_.input == 0) return;
    run_gemm(projection_call(dims_, w, d, bias_ != nullptr), math_, ctx_.input(0), ctx_.input(1), projected_);
  }

  // out[batch, n] = state · R_d[first, first + n)ᵀ, R_d's rows from `first` (all gates: first 0, n = width()).
  void recur(int64_t d, const Tensor& state, int64_t first, int64_t n, Tensor& out) const {
    if (dims_.batch == 0) return;
    run_gemm(recurrence_call(dims_.batch, attrs_.hidden, width(), d, first, n), math_, state, ctx_.input(2), out);
  }
  void recur(int64_t d, const Tensor& state) { recur(d, state, 0, width(), recurrent_); }

  // Every direction in turn: its projection and initial states (h, and c where given), step(d, t) at the time
  // of every step, its final states; then the node's outputs.
  template <class Step>
  void each_step(Tensor& h, Tensor* c, Step&& step) {
    for (int64_t d = 0; d < attrs_.directions; ++d) {
      project(d);
      initial(5, d, h);
      if (c) initial(6, d, *c);
      for (int64_t s = 0; s < dims_.seq; ++s) step(d, attrs_.reverse_only || d == 1 ? dims_.seq - 1 - s : s);
      final(1, d, h);
      if (c) final(2, d, *c);
    }
    finish();
  }

  // each_step's parts (public: a CUDA device lambda's enclosing function cannot be private).

  // Direction d's part of initial_h (input 5) or initial_c (input 6), or zeros, into `state` [batch, hidden].
  void initial(size_t input, int64_t d, Tensor& state) const {
    if (!ctx_.has_input(input)) return zero(state);
    const float* from = device_data<float>(ctx_.input(input));
    float* to = device_data<float>(state);
    const RecurrentLayout layout = layout_;
    const int64_t H = layout.hidden;
    for_each_index(state.numel(), [=] __device__(int64_t i) { to[i] = from[layout.state_at(d, i / H, i % H)]; });
  }

  // Direction d's final `state` into output `output` (Y_h: 1, Y_c: 2), when it is requested.
  void final(size_t output, int64_t d, const Tensor& state) {
    if (!ctx_.output_requested(output)) return;
    std::optional<Tensor>& out = finals_[output - 1];
    if (!out) out = running().empty(DType::Float32, dims_.state_shape(attrs_));
    const float* from = device_data<float>(state);
    float* to = device_data<float>(*out);
    const RecurrentLayout layout = layout_;
    const int64_t H = layout.hidden;
    for_each_index(state.numel(), [=] __device__(int64_t i) { to[layout.state_at(d, i / H, i % H)] = from[i]; });
  }

  // Sets Y and the final states.
  void finish() {
    if (y_) ctx_.set_output(0, std::move(*y_));
    for (size_t i = 0; i < 2; ++i)
      if (finals_[i]) ctx_.set_output(i + 1, std::move(*finals_[i]));
  }

 private:
  KernelContext& ctx_;
  const RecurrentAttrs& attrs_;
  int64_t gates_;
  RecurrentDims dims_;
  RecurrentLayout layout_;
  Format storage_ = Format::FP32;
  GemmMath math_;
  const float* bias_ = nullptr;
  Tensor projected_, recurrent_;
  std::optional<Tensor> y_, finals_[2];
};

}  // namespace

}  // namespace mpa::cuda
