#include "tensor/broadcast.h"

#include <string>

namespace mpa {

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const Shape& t : shapes) all += (all.empty() ? "" : ", ") + shape_str(t);
      fail("shapes " + all + " cannot be broadcast together");
    }
  }
  return out;
}

BroadcastRuns::BroadcastRuns(const Shape& out_shape, const std::vector<Shape>& input_shapes) {
  const size_t rank = out_shape.size(), n = input_shapes.size();
  // Per input, per output dim: stride in elements, 0 where broadcast.
  std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < n; ++k) {
    const Shape& s = input_shapes[k];
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
      const size_t o = rank - s.size() + i;
      strides[k][o] = (s[i] == 1 && out_shape[o] != 1) ? 0 : stride;
      stride *= s[i];
    }
  }
  // Collapse trailing dims into one run while every input keeps a uniform pattern (all contiguous with
  // the dims below, or all broadcast).
  steps_.assign(n, 0);
  size_t first_run_dim = rank;
  if (rank > 0) {
    first_run_dim = rank - 1;
    run_length_ = out_shape[rank - 1];
    for (size_t k = 0; k < n; ++k) steps_[k] = strides[k][rank - 1] == 0 ? 0 : 1;
    while (first_run_dim > 0) {
      const size_t d = first_run_dim - 1;
      bool mergeable = true;  // size-1 dims never change any offset
      if (out_shape[d] != 1)
      for (size_t k = 0; k < n && mergeable; ++k) {
        const bool broadcast = strides[k][d] == 0 && out_shape[d] != 1;
        if (steps_[k] == 0) mergeable = broadcast || out_shape[d] == 1;
        else mergeable = !broadcast && strides[k][d] == run_length_;
      }
      if (!mergeable) break;
      run_length_ *= out_shape[d];
      --first_run_dim;
    }
  }
  outer_dims_.assign(out_shape.begin(), out_shape.begin() + static_cast<std::ptrdiff_t>(first_run_dim));
  outer_strides_.resize(n);
  for (size_t k = 0; k < n; ++k)
    outer_strides_[k].assign(strides[k].begin(), strides[k].begin() + static_cast<std::ptrdiff_t>(first_run_dim));
  num_runs_ = shape_numel(outer_dims_);
  if (run_length_ == 0) num_runs_ = 0;
}

void BroadcastRuns::offsets(int64_t run, int64_t* offsets) const {
  const size_t n = outer_strides_.size();
  for (size_t k = 0; k < n; ++k) offsets[k] = 0;
  for (size_t d = outer_dims_.size(); d-- > 0;) {
    const int64_t idx = run % outer_dims_[d];
    run /= outer_dims_[d];
    for (size_t k = 0; k < n; ++k) offsets[k] += idx * outer_strides_[k][d];
  }
}

}  // namespace mpa
