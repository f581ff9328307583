// Numpy-style multidirectional broadcasting, shared by every elementwise op (Add, Where, Expand, ...).
// The iteration is expressed as runs: maximal contiguous stretches of the output along which each input
// either advances by one element or stays put, so inner loops are simple strided loops.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/cpu/parallel.h"
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

// Runs body(out_offset, in_offsets, length) over every run, in parallel.
template <class Body>
void for_each_broadcast_run(const Shape& out_shape, const std::vector<Shape>& input_shapes, Body&& body) {
  const BroadcastRuns runs(out_shape, input_shapes);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(runs.run_length(), 1));
  cpu::parallel_for(runs.num_runs(), grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> offsets(input_shapes.size());
    for (int64_t r = begin; r < end; ++r) {
      runs.offsets(r, offsets.data());
      body(r * runs.run_length(), offsets.data(), runs);
    }
  });
}

// Like for_each_broadcast_run, but split over elements instead of whole runs, so that a single long run
// (same-shape operands, a tensor and a scalar) still uses every thread. Calls
// body(out_offset, in_offsets, in_steps, length) for each piece of a run; in_steps[k] is 0 (operand k
// stays put) or 1 (operand k advances with the output). grain: elements worth a thread.
template <class Body>
void for_each_broadcast_span(const Shape& out_shape, const std::vector<Shape>& input_shapes, int64_t grain,
                             Body&& body) {
  const BroadcastRuns runs(out_shape, input_shapes);
  const size_t n = input_shapes.size();
  const int64_t length = runs.run_length();
  std::vector<int64_t> steps(n);
  for (size_t k = 0; k < n; ++k) steps[k] = runs.step(k);
  cpu::parallel_for(runs.num_runs() * length, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> run_start(n), offsets(n);
    int64_t run = begin / length, pos = begin % length;
    while (begin < end) {
      runs.offsets(run, run_start.data());
      const int64_t count = std::min(length - pos, end - begin);
      for (size_t k = 0; k < n; ++k) offsets[k] = run_start[k] + pos * steps[k];
      body(begin, static_cast<const int64_t*>(offsets.data()), static_cast<const int64_t*>(steps.data()), count);
      begin += count;
      ++run;
      pos = 0;
    }
  });
}

}  // namespace mpa
