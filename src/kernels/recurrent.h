// The recurrent ops' element math (LSTM, GRU, RNN), written once for the CPU and CUDA backends: the
// activation functions the ops accept by name, the clip before them, and the LSTM cell update. The CPU runs
// a gate's values through one function in a loop (so that it vectorises); a device runs one element per
// thread. Either way each value sees the same operations in the same order.
#pragma once
#include <cstdint>

#include "kernels/unary.h"

namespace mpa {

enum class RecurrentKind {
  Sigmoid,
  Tanh,
  Relu,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus
};

// f(v) with the function's alpha and beta (ONNX defaults filled in by the op's attributes).
template <RecurrentKind K>
struct RecurrentFn {
  template <class T>
  MPA_HD T operator()(T v, T a, T b) const {
    if constexpr (K == RecurrentKind::Sigmoid)
      return SigmoidF{}(v);
    else if constexpr (K == RecurrentKind::Tanh)
      return dmath::tanh(v);
    else if constexpr (K == RecurrentKind::Relu)
      return v > 0 ? v : T(0);
    else if constexpr (K == RecurrentKind::Affine)
      return a * v + b;
    else if constexpr (K == RecurrentKind::LeakyRelu)
      return v >= 0 ? v : a * v;
    else if constexpr (K == RecurrentKind::ThresholdedRelu)
      return v > a ? v : T(0);
    else if constexpr (K == RecurrentKind::ScaledTanh)
      return a * dmath::tanh(b * v);
    else if constexpr (K == RecurrentKind::HardSigmoid) {
      const T y = a * v + b, below_one = y < T(1) ? y : T(1);  // std::max(0, std::min(1, y))
      return T(0) < below_one ? below_one : T(0);
    } else if constexpr (K == RecurrentKind::Elu)
      return v >= 0 ? v : a * (dmath::exp(v) - T(1));
    else if constexpr (K == RecurrentKind::Softsign)
      return SoftsignF{}(v);
    else
      return SoftplusF{}(v);
  }
};

// Calls f(RecurrentFn<kind>{}) and returns what it returns.
template <class F>
MPA_HD auto with_recurrent_fn(RecurrentKind kind, F&& f) {
  switch (kind) {
    case RecurrentKind::Sigmoid: return f(RecurrentFn<RecurrentKind::Sigmoid>{});
    case RecurrentKind::Tanh: return f(RecurrentFn<RecurrentKind::Tanh>{});
    case RecurrentKind::Relu: return f(RecurrentFn<RecurrentKind::Relu>{});
    case RecurrentKind::Affine: return f(RecurrentFn<RecurrentKind::Affine>{});
    case RecurrentKind::LeakyRelu: return f(RecurrentFn<RecurrentKind::LeakyRelu>{});
    case RecurrentKind::ThresholdedRelu: return f(RecurrentFn<RecurrentKind::ThresholdedRelu>{});
    case RecurrentKind::ScaledTanh: return f(RecurrentFn<RecurrentKind::ScaledTanh>{});
    case RecurrentKind::HardSigmoid: return f(RecurrentFn<RecurrentKind::HardSigmoid>{});
    case RecurrentKind::Elu: return f(RecurrentFn<RecurrentKind::Elu>{});
    case RecurrentKind::Softsign: return f(RecurrentFn<RecurrentKind::Softsign>{});
    case RecurrentKind::Softplus: break;
  }
  return f(RecurrentFn<RecurrentKind::Softplus>{});
}

// clip (0: none) then f, as the ops apply an activation to a gate's value: std::min(std::max(v, -clip), clip).
struct RecurrentActivation {
  RecurrentKind kind = RecurrentKind::Sigmoid;
  float alpha = 0, beta = 0;

  template <class T>
  MPA_HD static T clipped(T v, T clip) {
    if (!(clip > 0)) return v;
    const T above = v < -clip ? -clip : v;
    return clip < above ? clip : above;
  }
  // One value (a device thread's).
  template <class T>
  MPA_HD T operator()(T v, T clip) const {
    const T a = alpha, b = beta, x = clipped(v, clip);
    return with_recurrent_fn(kind, [&](auto fn) { return fn(x, a, b); });
  }
  // v[i] = f(clip(v[i])) over a gate's values (one loop per kind, so that it vectorises).
  template <class T>
  void apply(T* v, int64_t n, T clip) const {
    if (clip > 0)
      for (int64_t i = 0; i < n; ++i) v[i] = clipped(v[i], clip);
    const T a = alpha, b = beta;
    with_recurrent_fn(kind, [&](auto fn) {
      for (int64_t i = 0; i < n; ++i) v[i] = fn(v[i], a, b);
    });
  }
};

// The LSTM's new cell state from its forget, input and cell gates, and the GRU's new hidden state from its
// update gate z, candidate c and previous state h (ONNX's formulas, in this order of operations).
template <class T>
MPA_HD T lstm_cell_state(T forget, T cell, T input, T candidate) {
  return forget * cell + input * candidate;
}
template <class T>
MPA_HD T gru_hidden(T z, T candidate, T h) {
  return (T(1) - z) * candidate + z * h;
}

// The LSTM cell of one hidden unit (ONNX gate order i, o, f, c), as ops/lstm.cpp computes it gate by gate on
// the CPU: the gates' pre-activations (input projection + recurrence + recurrence bias, summed in that order),
// peepholes p_i, p_o, p_f where `peepholes`, input_forget coupling; updates the cell state c and returns the
// hidden state. f, g, h are the op's three activation functions; h gets no clip.
struct LstmPeepholes {
  bool given = false;
  float i = 0, o = 0, f = 0;
};
template <class T>
MPA_HD T lstm_cell(T pre_i, T pre_o, T pre_f, T pre_c, const LstmPeepholes& p, T& c, bool input_forget,
                   const RecurrentActivation& f, const RecurrentActivation& g, const RecurrentActivation& h, T clip) {
  if (p.given) pre_i += T(p.i) * c, pre_f += T(p.f) * c;
  const T gi = f(pre_i, clip);
  const T gf = input_forget ? T(1) - gi : f(pre_f, clip);
  c = lstm_cell_state(gf, c, gi, g(pre_c, clip));
  if (p.given) pre_o += T(p.o) * c;
  return f(pre_o, clip) * h(c, T(0));
}

}  // namespace mpa
