// The CPU's parallel loops over broadcast runs (tensor/broadcast.h), for elementwise kernels.
#pragma once
#include <algorithm>
#include <vector>

#include "common/parallel.h"
#include "tensor/broadcast.h"

namespace mpa {

// Runs body(out_offset, in_offsets, length) over every run, in parallel.
template <class Body>
void for_each_broadcast_run(const Shape& out_shape, const std::vector<Shape>& input_shapes, Body&& body) {
  const BroadcastRuns runs(out_shape, input_shapes);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(runs.run_length(), 1));
  parallel_for(runs.num_runs(), grain, [&](int64_t begin, int64_t end) {
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
  parallel_for(runs.num_runs() * length, grain, [&](int64_t begin, int64_t end) {
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
