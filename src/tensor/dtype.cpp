#include "tensor/dtype.h"

namespace mpa {

bool dtype_is_supported(int32_t t) {
  switch (static_cast<DType>(t)) {
    case DType::Float32: case DType::UInt8: case DType::Int8: case DType::UInt16: case DType::Int16:
    case DType::Int32: case DType::Int64: case DType::Bool: case DType::Float16: case DType::Float64:
    case DType::UInt32: case DType::UInt64: case DType::BFloat16:
      return true;
    default: return dtype_is_narrow(static_cast<DType>(t));
  }
}

bool dtype_is_narrow(DType t) {
  switch (t) {
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
    case DType::Float8E8M0:
    case DType::Float4E2M1:
    case DType::Int4:
    case DType::UInt4:
    case DType::Int2:
    case DType::UInt2: return true;
    default:
      return false;
  }
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: case DType::Int32: case DType::UInt32: return 4;
    case DType::Float64: case DType::Int64: case DType::UInt64: return 8;
    case DType::Float16: case DType::BFloat16: case DType::Int16: case DType::UInt16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    default: return dtype_is_narrow(t) ? 1 : 0;  // one byte per element in memory (dtype.h)
  }
}

std::string onnx_type_name(int32_t t) {
  static const char* const names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16", "int32",
                                      "int64", "string", "bool", "float16", "float64", "uint32", "uint64",
                                      "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
                                      "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1",
                                      "float8e8m0", "uint2", "int2"};
  if (t >= 0 && t < static_cast<int32_t>(sizeof names / sizeof names[0])) return names[t];
  return "type#" + std::to_string(t);
}

std::string dtype_name(DType t) { return onnx_type_name(static_cast<int32_t>(t)); }

bool dtype_is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}
bool dtype_is_narrow_float(DType t) {
  return t == DType::Float8E4M3FN || t == DType::Float8E4M3FNUZ || t == DType::Float8E5M2 ||
         t == DType::Float8E5M2FNUZ || t == DType::Float8E8M0 || t == DType::Float4E2M1;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::Int4:
    case DType::UInt4:
    case DType::Float4E2M1: return 4;
    case DType::Int2:
    case DType::UInt2: return 2;
    default: return 8 * static_cast<int>(dtype_size(t));
  }
}

bool dtype_is_signed_int(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}
bool dtype_is_unsigned_int(DType t) {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

}  // namespace mpa
