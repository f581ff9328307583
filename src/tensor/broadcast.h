// Numpy-style multidirectional broadcasting as index math on shapes, shared by every elementwise op (Add,
// Where, Expand, ...) on every backend; the CPU's loops over it are backends/cpu/broadcast_loops.h.
// The iteration is expressed as runs: maximal contiguous stretches of the output along which each input
// either advances by one element or stays put, so inner loops are simple strided loops.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace mpa {

// The broadcast result shape of all shapes, or a failure naming them.
Shape broadcast_shapes(const std::vector<Shape>& shapes);

class BroadcastRuns {
 public:
  BroadcastRuns(const Shape& out_shape, const std::vector<Shape>& input_shapes);
  int64_t num_runs() const { return num_runs_; }
  int64_t run_length() const { return run_length_; }
  // Per input: element step inside a run (0 = broadcast scalar along the run, 1 = contiguous).
  int64_t step(size_t input) const { return steps_[input]; }
  // Offsets of every input at the start of run r (offsets.size() == number of inputs).
  void offsets(int64_t run, int64_t* offsets) const;

 private:
  int64_t num_runs_ = 1, run_length_ = 1;
  Shape outer_dims_;                                // collapsed dims above the run
  std::vector<std::vector<int64_t>> outer_strides_;  // per input, per outer dim (0 where broadcast)
  std::vector<int64_t> steps_;
};

}  // namespace mpa
