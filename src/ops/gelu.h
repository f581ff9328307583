// The ONNX Runtime CUDA EP's half-precision GELUs: the tanh form, shared by Gelu(approximate="tanh") and
// com.microsoft FastGelu, which ORT runs on the same kernel, and the erf form of com.microsoft Gelu.
#pragma once
#include "kernels/math.h"
#include "tensor/formats.h"

namespace mpa {

// ORT CUDA EP rule (docs/numerics.md, "Gelu/FastGelu (ORT fused)"): Gelu(approximate="tanh") on fp16 runs
// ORT's FastGelu kernel in half arithmetic, cdf = a + a * tanh(x * (c * x * x + b)), y = x * cdf, with the
// constants in fp16 and one RN16 after every operation (tanh via tanhf on the float value). The exact Gelu
// is not affected: its fp16 kernel computes in float and rounds once (ORT's OP_Gelu<half>), as Generic does.
struct OrtCudaHalfTanhGeluF {
  MPA_HD float operator()(float x) const {
    auto rn16 = [](float v) { return round_to_format(Format::FP16, v); };
    const float a = rn16(0.5f), b = rn16(0.7978845608028654f), c = rn16(0.035677408136300125f);
    x = rn16(x);
    const float inner = rn16(rn16(rn16(c * x) * x) + b);
    const float cdf = rn16(a + rn16(a * rn16(dmath::tanh(rn16(x * inner)))));
    return rn16(x * cdf);
  }
};

// ORT CUDA EP rule: com.microsoft Gelu on fp16 runs the half specialisation of _Gelu (cu_inc/common.cuh),
// a * 0.5 * (1 + erf(sqrt(1/2) * a)) in half arithmetic, the constants in half, erf via erff on the float
// value, one RN16 after every operation in C++'s evaluation order.
struct OrtCudaHalfErfGeluF {
  MPA_HD float operator()(float x) const {
    auto rn16 = [](float v) { return round_to_format(Format::FP16, v); };
    const float alpha = rn16(0.7071067811865476f);
    x = rn16(x);
    return rn16(rn16(x * 0.5f) * rn16(1.0f + rn16(dmath::erf(rn16(alpha * x)))));
  }
};

}  // namespace mpa
