// Emulating a storage format on the CPU: a tensor "in fp16" is a float32 tensor whose every element lies
// on the fp16 grid. Computing in float and rounding each op's float outputs onto the grid is bit-identical
// to fp16 storage with float op math (load(fp16) is exact in float), and it serves every format the same
// way (fp16, bf16, fp8, tf32). docs/numerics.md says where this models a GPU and where it approximates.
#pragma once
#include "ops/op.h"
#include "tensor/format_storage.h"
#include "tensor/formats.h"
#include "tensor/tensor.h"

namespace mpa {

// The settings that run nodes in `format`: its storage format (tensor/formats.h storage_format) and, for
// TF32, FP32 storage with TF32 GEMM/Conv operands.
ExecConfig config_for(Format format, Accumulation accumulation = Accumulation::FP32,
                      RuntimeProfile profile = RuntimeProfile::Generic, int threads = 1);
// The format a config computes in: config_for's inverse (TF32 for FP32 storage with TF32 operands).
Format format_of(const ExecConfig& config);

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
// The per-tensor scale that maps absmax onto the format's largest finite value (1 for an all-zero tensor): a
// float, the smallest whose float quotient absmax / scale stays within the format.
double absmax_scale(Format format, double absmax);
// float32 -> float64 (the FP64 reference); other types are shared without copying.
Tensor widen_to_double(const Tensor& tensor);

}  // namespace mpa
