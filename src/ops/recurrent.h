// What RNN, GRU and LSTM share on the CPU, over their attributes and dimensions (ops/recurrent_attrs.h): the
// input projection X·Wᵀ + Wb for all steps at once through the GEMM seam (so TF32 / fp16-accumulation math
// applies), per-batch sequence lengths, and writing Y / Y_h. Each op file holds only its cell. Computes in the tensors'
// type (float, or double for an fp64 reference); under a 16-bit storage format the float hidden (and cell) state is
// rounded onto the format after every step, as a GPU runtime stores it between steps in the tensor's type.
#pragma once
#include <string>
#include <vector>

#include "backends/cpu/gemm.h"
#include "common/parallel.h"
#include "ops/recurrent_attrs.h"

namespace mpa {

// The sequence in step order for one run, in element type T: shapes, lengths, projections, and the
// outputs to fill.
template <class T>
class RecurrentRun {
 public:
  // gates: G (1 for RNN, 3 for GRU, 4 for LSTM). Validates X, W, R, B, sequence_lens, initial_h (all of
  // type T: other element types are UnsupportedType).
  RecurrentRun(KernelContext& ctx, const RecurrentAttrs& attrs, int64_t gates);

  int64_t steps() const { return seq_; }
  int64_t batch() const { return batch_; }
  int64_t hidden() const { return attrs_.hidden; }
  // Steps batch row b runs (sequence_lens, else all).
  int64_t length(int64_t b) const { return lengths_[size_t(b)]; }
  // Time index of step s for batch row b in direction d (reverse directions walk each row's own length
  // backwards).
  int64_t time(int direction, int64_t s, int64_t b) const { return is_reverse(direction) ? length(b) - 1 - s : s; }
  bool is_reverse(int direction) const { return attrs_.reverse_only || direction == 1; }
  // X·W_dᵀ + Wb_d for every (t, b): row t * batch + b, G * hidden wide.
  const std::vector<T>& projected(int direction) const { return projected_[size_t(direction)]; }
  // Recurrent weights R_d [G * hidden, hidden] and bias Rb_d [G * hidden] (zeros when B is absent).
  const T* recurrence(int direction) const;
  const T* recurrence_bias(int direction) const;
  // initial_h (or zeros) of direction d, [batch, hidden].
  std::vector<T> initial_state(int direction, size_t input_index) const;
  // rows [batch, width] = a [batch, hidden] · wᵀ, w [width, hidden], through the GEMM seam.
  void times_transposed(const T* a, const T* w, int64_t width, T* rows) const;
  // Rounds a state onto the storage format between steps (no-op for float32 storage).
  void store_state(std::vector<T>& state) const;
  // Records H of batch row b at time t (direction d) into Y, when Y is requested.
  void emit(int direction, int64_t t, int64_t b, const T* h);
  // Runs f(d) for every direction; two directions at once, one per thread, where there are threads for them.
  // Their steps are independent: each thread then runs a whole sequence with its direction's recurrent weights
  // in its own cache and no synchronisation per step (as onnxruntime's CPU LSTM runs them). The GEMMs inside
  // split into the same blocks either way (backends/cpu/gemm.h), so results do not depend on it.
  template <class F>
  void for_each_direction(F&& f) const {
    parallel_for(attrs_.directions, 1, [&](int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d) f(static_cast<int>(d));
    });
  }
  // Writes Y_h (output 1) or Y_c (output 2) from the final states of each direction.
  void write_final(size_t output, const std::vector<std::vector<T>>& finals);

 private:
  KernelContext& ctx_;
  const RecurrentAttrs& attrs_;
  int64_t gates_, seq_ = 0, batch_ = 0, input_ = 0;
  RecurrentLayout layout_;
  std::vector<int64_t> lengths_;
  std::vector<std::vector<T>> projected_;
  std::vector<T> recurrence_bias_zeros_;
  cpu::GemmMath math_;
  Format state_format_ = Format::FP32;
  T* y_ = nullptr;
};

// Runs cell.compute_as<T>(ctx) with T the type of input X: float, or double (an fp64 reference).
template <class Cell>
void run_recurrent_cell(const Cell& cell, KernelContext& ctx) {
  if (ctx.input(0).dtype() == DType::Float64) return cell.template compute_as<double>(ctx);
  cell.template compute_as<float>(ctx);
}

}  // namespace mpa
