// The recurrent ops' per-element kernels on CUDA (one thread per batch row and hidden unit), and the GEMMs each
// step describes to cuBLAS: host and device code without CUDA runtime calls, so that the host's tests run the
// same cells and GEMM descriptions through the CPU's GEMM and hold them against the CPU's ops
// (tests/backend/test_cuda_kernels_on_host.cpp). ops/recurrent_steps.cuh launches them.
#pragma once
#include <cstdint>

#include "backends/cuda/ops/gemm_call.h"
#include "kernels/recurrent.h"
#include "ops/recurrent_attrs.h"
#include "tensor/formats.h"
#include "tensor/hd.h"

namespace mpa::cuda {

// What every cell kernel of one step reads: the layout, the direction and time, the input projection, the
// recurrence (all gates) and its bias (null without B: zeros, which the CPU adds too), the clip and the storage
// format. Unit i is (batch row i / hidden, unit i % hidden).
struct StepInputs {
  RecurrentLayout layout;
  int64_t gates = 1, d = 0, t = 0;
  const float *projected = nullptr, *recurrent = nullptr, *recurrence_bias = nullptr;
  float clip = 0;
  Format storage = Format::FP32;

  MPA_HD float projection(int64_t i, int64_t gate) const {
    const int64_t H = layout.hidden;
    return projected[(layout.x_row(t, i / H) * gates + gate) * H + i % H];
  }
  // state·Rᵀ and Rb of a gate.
  MPA_HD float recurrent_term(int64_t i, int64_t gate) const {
    const int64_t H = layout.hidden;
    return recurrent[(i / H * gates + gate) * H + i % H];
  }
  MPA_HD float bias(int64_t i, int64_t gate) const {
    return recurrence_bias ? recurrence_bias[gate * layout.hidden + i % layout.hidden] : 0.f;
  }
  // The recurrence's term with its bias: state·Rᵀ + Rb.
  MPA_HD float recurrence(int64_t i, int64_t gate) const { return recurrent_term(i, gate) + bias(i, gate); }
  // A gate's pre-activation, summed as on the CPU: projection + recurrence + recurrence bias.
  MPA_HD float pre(int64_t i, int64_t gate) const {
    return projection(i, gate) + recurrent_term(i, gate) + bias(i, gate);
  }
  // A state as stored between steps: on the storage format's grid.
  MPA_HD float stored(float v) const { return storage != Format::FP32 ? round_to_format(storage, v) : v; }
  MPA_HD int64_t y_at(int64_t i) const { return layout.y_at(t, d, i / layout.hidden, i % layout.hidden); }
};

// The projection X·W_dᵀ onto `projected` [seq x batch, width], its rows in X's own order (RecurrentLayout::x_row
// finds a step's rows); with_bias: blended onto Wb_d already written there.
inline GemmCall projection_call(const RecurrentDims &dims, int64_t width, int64_t d, bool with_bias) {
  GemmCall call;
  call.trans_b = true;
  call.M = dims.seq * dims.batch;
  call.N = width;
  call.K = dims.input;
  call.lda = call.ldb = dims.input;
  call.ldc = width;
  call.beta = with_bias ? 1.0 : 0.0;
  call.b_offsets = {d * width * dims.input};
  return call;
}

// A step's recurrence, out[batch, n] = state[batch, hidden] · R_d[first, first + n)ᵀ (R: [directions, width,
// hidden]; all gates: first 0, n = width).
inline GemmCall recurrence_call(int64_t batch, int64_t hidden, int64_t width, int64_t d, int64_t first, int64_t n) {
  GemmCall call;
  call.trans_b = true;
  call.M = batch;
  call.N = n;
  call.K = hidden;
  call.lda = call.ldb = hidden;
  call.ldc = n;
  call.b_offsets = {(d * width + first) * hidden};
  return call;
}

struct LstmStep {
  StepInputs in;
  const float *peepholes;  // null when absent
  float *h, *c, *y;        // y: null when not requested
  RecurrentActivation f, g, act_h;
  bool input_forget;

  MPA_HD void operator()(int64_t i) const {
    const int64_t H = in.layout.hidden, j = i % H;
    LstmPeepholes p;
    if (peepholes) p = {true, peepholes[j], peepholes[H + j], peepholes[2 * H + j]};
    float cell = c[i];
    const float hidden = in.stored(
        lstm_cell(in.pre(i, 0), in.pre(i, 1), in.pre(i, 2), in.pre(i, 3), p, cell, input_forget, f, g, act_h, in.clip));
    c[i] = in.stored(cell);
    h[i] = hidden;
    if (y) y[in.y_at(i)] = hidden;
  }
};

struct RnnStep {
  StepInputs in;
  float *h, *y;  // y: null when not requested
  RecurrentActivation f;

  MPA_HD void operator()(int64_t i) const {
    const float hidden = in.stored(f(in.pre(i, 0), in.clip));
    h[i] = hidden;
    if (y) y[in.y_at(i)] = hidden;
  }
};

// z and r; the candidate's recurrent term r ⊙ (H·Rhᵀ + Rbh) (linear_before_reset), or r ⊙ H for its GEMM.
struct GruGates {
  StepInputs in;
  const float *h;
  float *z, *candidate, *reset;  // reset: null when linear_before_reset
  RecurrentActivation f;

  MPA_HD void operator()(int64_t i) const {
    z[i] = f(in.pre(i, 0), in.clip);
    const float gate = f(in.pre(i, 1), in.clip);
    if (reset)
      reset[i] = in.stored(gate * h[i]);
    else
      candidate[i] = gate * in.recurrence(i, 2);
  }
};

// The candidate (+ Rbh after its GEMM when not linear_before_reset, then + the input projection), g, the new H.
struct GruState {
  StepInputs in;
  const float *z, *candidate;
  bool candidate_needs_bias;
  float *h, *y;  // y: null when not requested
  RecurrentActivation g;

  MPA_HD void operator()(int64_t i) const {
    float c = candidate[i];
    if (candidate_needs_bias) c += in.bias(i, 2);
    c = g(c + in.projection(i, 2), in.clip);
    const float hidden = in.stored(gru_hidden(z[i], c, h[i]));
    h[i] = hidden;
    if (y) y[in.y_at(i)] = hidden;
  }
};

}  // namespace mpa::cuda
