// The narrow element types (dtype.h: float8/float4 flavours, E8M0, int4/uint4, int2/uint2): their values,
// conversions onto them, and ONNX's packed layout in files. In memory an element takes one byte.
#pragma once
#include <cstdint>
#include <utility>

#include "tensor/dtype.h"
#include "tensor/formats.h"

namespace mpa {

// The value of element `code` of narrow type t (every one is exactly a float).
float narrow_to_float(DType t, uint8_t code);
// A float onto narrow float type t by ONNX Cast's rules (formats.h); saturate and rounding as its
// attributes (rounding only concerns E8M0; a float4 always saturates).
uint8_t float_to_narrow(DType t, float value, bool saturate, E8M0Rounding rounding = E8M0Rounding::Up);
// An integer onto int4/uint4/int2/uint2 as Cast does it: the low bits kept (two's complement wrap).
uint8_t wrap_to_narrow_int(DType t, int64_t value);
// [min, max] of an integer type, narrow or not (the saturation range of QuantizeLinear).
std::pair<int64_t, int64_t> integer_range(DType t);

// Bytes that n elements of type t take in an ONNX file (packed for sub-byte types).
uint64_t packed_bytes(DType t, int64_t n);
// Between ONNX's packed layout (the first of two 4-bit or four 2-bit values in the low bits) and one
// byte per element (int4/int2 sign-extended). Types of 8 bits and more are copied.
void unpack_elements(DType t, const uint8_t* packed, uint8_t* out, int64_t n);
void pack_elements(DType t, const uint8_t* elements, uint8_t* packed, int64_t n);

}  // namespace mpa
