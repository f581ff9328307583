// Element types. Values equal ONNX TensorProto.DataType so they convert by cast.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor/float16.h"

namespace mpa {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};

// True for the element types this runtime stores (everything above but Undefined and String).
bool dtype_is_supported(int32_t onnx_type);
size_t dtype_size(DType t);
std::string dtype_name(DType t);
std::string onnx_type_name(int32_t onnx_type);  // names any TensorProto type id, also unsupported ones
bool dtype_is_float(DType t);                   // float32/64, float16, bfloat16
bool dtype_is_signed_int(DType t);
bool dtype_is_unsigned_int(DType t);
// The 8-, 4- and 2-bit types (float8 and float4 flavours, int4/uint4, int2/uint2). Only conversions read
// them (Cast, quantization, BitCast: tensor/narrow.h), so visit_dtype does not: every other op refuses them
// as unsupported. In memory they take one byte per element, whatever their width, so that elements are
// addressable: a float code in the low bits, an int4/int2 sign-extended to int8, a uint4/uint2 as uint8.
// Only files pack them (ONNX: two 4-bit or four 2-bit values per byte, the first in the low bits).
bool dtype_is_narrow(DType t);
bool dtype_is_narrow_float(DType t);  // the float8 and float4 types
int dtype_bits(DType t);              // bits per element in packed files: 2, 4, or 8 * dtype_size

// Maps a C++ element type to its DType.
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::UInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::UInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

// The type arithmetic is done in: 16-bit floats compute in float (and are rounded when stored).
template <class T> struct ComputeType { using type = T; };
template <> struct ComputeType<Float16> { using type = float; };
template <> struct ComputeType<BFloat16> { using type = float; };
template <class T> using compute_t = typename ComputeType<T>::type;

// Loads a stored element into its compute type and rounds a computed value into storage.
template <class T> MPA_HD compute_t<T> load(T v) { return v; }
template <> MPA_HD float load(Float16 v) { return half_to_float(v.bits); }
template <> MPA_HD float load(BFloat16 v) { return bfloat16_to_float(v.bits); }
template <class T> MPA_HD T store(compute_t<T> v) { return static_cast<T>(v); }
template <> MPA_HD Float16 store(float v) { return Float16{float_to_half(v)}; }
template <> MPA_HD BFloat16 store(float v) { return BFloat16{float_to_bfloat16(v)}; }

template <class T> struct TypeTag { using type = T; };

}  // namespace mpa
