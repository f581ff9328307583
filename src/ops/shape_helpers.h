// Checks shared by the shape / data-movement ops: axes, shape-valued inputs, output allocation. Every
// failure is a one-line mpa::Error naming the node, never a crash.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/op.h"

namespace mpa {

// axis in [-rank, rank) mapped to [0, rank); fails naming the node otherwise.
int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what = "axis");
// Every axis normalised; fails on duplicates.
std::vector<int64_t> normalize_axes(const Node& node, const std::vector<int64_t>& axes, int64_t rank);
// The single element of a scalar (or one-element) input as int64.
int64_t scalar_int(const Node& node, const Tensor& t, const char* what);
// shape_numel() with the node named in the message.
int64_t checked_numel(const Node& node, const Shape& shape);
// allocate_output() after checking the shape (negative dims, overflowing element or byte counts) and
// turning an allocation failure into an error naming the node and the size.
Tensor& allocate_checked(KernelContext& ctx, size_t i, DType dtype, const Shape& shape);
// The shared element type of inputs [first, last) (fails when they differ).
void require_same_dtype(const KernelContext& ctx, size_t first, size_t last);
// Reads an index, wrapping negatives, and fails when it is outside [-dim, dim).
int64_t checked_index(const Node& node, int64_t index, int64_t dim, const char* what);
// Reads every element of an index tensor (int32 or int64) as int64.
std::vector<int64_t> index_values(const Node& node, const Tensor& indices);

}  // namespace mpa
