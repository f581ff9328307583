// The CPU backend's format storage (runtime/precision.h gives the rules): a tensor "in fp16" is a float32
// tensor whose every element lies on the fp16 grid, made by rounding in place or by a rounded copy, block
// by block over the backend's threads.
#pragma once
#include "tensor/formats.h"
#include "tensor/tensor.h"

namespace mpa::cpu {

// Rounds every element of a float32 tensor onto the format's grid, in place and in parallel (into a copy
// when the storage is shared with another tensor, which must not change). Other
// element types are left alone: integer and bool tensors, and tensors the model itself stores in 16 bits.
// With a per-tensor `scale` (FP8 recipes) the values are stored as round(x / scale) * scale.
void round_tensor_to_format(Tensor& tensor, Format format, double scale = 1);
// A copy of `tensor` on the format's grid: float32 and float64 become float32 on the grid; other types
// are shared without copying. For the FP32 format float64 tensors are narrowed to float32.
Tensor tensor_in_format(const Tensor& tensor, Format format, double scale = 1);
// The largest finite |x| of a floating tensor (0 for other element types).
double absmax_of(const Tensor& tensor);
// float32 -> float64 (the FP64 reference); other types are shared without copying.
Tensor widen_to_double(const Tensor& tensor);

}  // namespace mpa::cpu
