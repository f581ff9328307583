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

}  // namespace mpa
