// A tensor's elements as a storage format holds them, span by span: the one rule that the executor's
// conversions (runtime/precision.h) and the probes' stored references (probes/divergence.cpp) both follow.
#pragma once
#include "tensor/formats.h"
#include "tensor/tensor.h"

namespace mpa {

// Elements [begin, end) of a floating tensor as tensor_in_format (runtime/precision.h) stores them, written
// to out as floats: float32 and float64 rounded onto the format's grid (float64 once: through float rounded
// to odd), 16-bit types (stored so by the model) as they are.
void store_span_in_format(const Tensor& tensor, int64_t begin, int64_t end, float* out, Format format,
                          double scale = 1);

// Whether `stored` (float32, as many elements) holds the floating tensor `reference` as store_span_in_format
// stores it in `format`, bit for bit: what comparing it with tensor_in_format(reference, format, scale) says,
// without making that copy. Compared block by block, so that a first block that differs settles it.
bool holds_in_format(const Tensor& stored, const Tensor& reference, Format format, double scale = 1);

}  // namespace mpa
