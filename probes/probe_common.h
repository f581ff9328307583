// Shared plumbing of the probes: each probe has a per-chunk accumulator (`Chunk::add` per element) so
// several probes read a tensor in one fused pass, `absorb` folds chunks in a fixed order, `merge` joins
// statistics of other samples (exactly: sums are ExactSum), and to_json/from_json (de)serialise them.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/parallel.h"
#include "kernels/probe_chunks.h"
#include "probes/exact_sum.h"
#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace mpa::probes {

using json = nlohmann::ordered_json;

// The per-element arithmetic the host and devices share.
using kernels::exponent_of;
using kernels::in_scaled_units;
using kernels::power_of_two;

// Elements per chunk: fixed, so results do not depend on the thread count.
inline constexpr int64_t kChunk = 16384;

// Calls visit(double value) for every element of a floating tensor (any float storage).
template <class Visit> void for_each_value(const Tensor& t, int64_t begin, int64_t end, Visit&& visit) {
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(t.raw());
    for (int64_t i = begin; i < end; ++i) visit(static_cast<double>(load(p[i])), i);
  });
}

// Runs make_chunk(begin, end) -> Chunk over fixed chunks in parallel on the host's threads, then
// fold(chunk) in chunk order: the figures do not depend on the thread count.
template <class Chunk, class MakeChunk, class Fold> void chunked(int64_t n, MakeChunk&& make_chunk, Fold&& fold) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Chunk> results(static_cast<size_t>(chunks));
  parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      results[static_cast<size_t>(c)] = make_chunk(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
  for (const Chunk& c : results) fold(c);
}

// JSON numbers cannot be NaN/Inf: undefined figures are written as null.
inline json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
inline double number_from(const json& j) { return j.is_null() ? std::nan("") : j.get<double>(); }

}  // namespace mpa::probes
