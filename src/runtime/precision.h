// Emulating a storage format on the CPU: a tensor "in fp16" is a float32 tensor whose every element lies
// on the fp16 grid. Computing in float and rounding each op's float outputs onto the grid is bit-identical
// to fp16 storage with float op math (load(fp16) is exact in float), and it serves every format the same
// way (fp16, bf16, fp8, tf32). docs/numerics.md says where this models a GPU and where it approximates.
// This file holds the rules; a backend applies them to its tensors (Backend::store_in_format, convert).
#pragma once
#include "ops/op.h"
#include "tensor/formats.h"

namespace mpa {

// The settings that run nodes in `format`: its storage format (tensor/formats.h storage_format) and, for
// TF32, FP32 storage with TF32 GEMM/Conv operands.
ExecConfig config_for(Format format, Accumulation accumulation = Accumulation::FP32,
                      RuntimeProfile profile = RuntimeProfile::Generic, int threads = 1);
// The format a config computes in: config_for's inverse (TF32 for FP32 storage with TF32 operands).
Format format_of(const ExecConfig& config);

// The per-tensor scale that maps absmax onto the format's largest finite value (1 for an all-zero tensor): a
// float, the smallest whose float quotient absmax / scale stays within the format.
double absmax_scale(Format format, double absmax);

}  // namespace mpa
