#include "tensor/narrow.h"

#include <cstring>

#include "common/error.h"

namespace mpa {

namespace {

// The sign-extended value of the low `bits` bits.
int8_t sign_extend(uint8_t low_bits, int bits) {
  const int sign = 1 << (bits - 1);
  return static_cast<int8_t>(((low_bits & ((1 << bits) - 1)) ^ sign) - sign);
}

}  // namespace

float narrow_to_float(DType t, uint8_t code) {
  switch (t) {
    case DType::Float8E4M3FN: return detail::Fp8E4M3FN::to_float(code);
    case DType::Float8E4M3FNUZ: return detail::Fp8E4M3FNUZ::to_float(code);
    case DType::Float8E5M2: return detail::Fp8E5M2::to_float(code);
    case DType::Float8E5M2FNUZ: return detail::Fp8E5M2FNUZ::to_float(code);
    case DType::Float4E2M1: return detail::Fp4E2M1::to_float(code);
    case DType::Float8E8M0: return e8m0_to_float(code);
    case DType::Int4:
    case DType::Int2: return static_cast<int8_t>(code);
    case DType::UInt4:
    case DType::UInt2: return code;
    default: fail("narrow_to_float: " + dtype_name(t) + " is not a narrow type");
  }
}

uint8_t float_to_narrow(DType t, float value, bool saturate, E8M0Rounding rounding) {
  switch (t) {
    case DType::Float8E4M3FN: return static_cast<uint8_t>(detail::Fp8E4M3FN::from_float(value, saturate));
    case DType::Float8E4M3FNUZ: return static_cast<uint8_t>(detail::Fp8E4M3FNUZ::from_float(value, saturate));
    case DType::Float8E5M2: return static_cast<uint8_t>(detail::Fp8E5M2::from_float(value, saturate));
    case DType::Float8E5M2FNUZ: return static_cast<uint8_t>(detail::Fp8E5M2FNUZ::from_float(value, saturate));
    case DType::Float4E2M1: return static_cast<uint8_t>(detail::Fp4E2M1::from_float(value, saturate));
    case DType::Float8E8M0: return float_to_e8m0(value, saturate, rounding);
    default: fail("float_to_narrow: " + dtype_name(t) + " is not a narrow float type");
  }
}

uint8_t wrap_to_narrow_int(DType t, int64_t value) {
  const int bits = dtype_bits(t);
  const uint8_t low = static_cast<uint8_t>(static_cast<uint64_t>(value) & ((1u << bits) - 1u));
  return t == DType::Int4 || t == DType::Int2 ? static_cast<uint8_t>(sign_extend(low, bits)) : low;
}

std::pair<int64_t, int64_t> integer_range(DType t) {
  switch (t) {
    case DType::UInt2: return {0, 3};
    case DType::Int2: return {-2, 1};
    case DType::UInt4: return {0, 15};
    case DType::Int4: return {-8, 7};
    case DType::UInt8: return {0, 255};
    case DType::Int8: return {-128, 127};
    case DType::UInt16: return {0, 65535};
    case DType::Int16: return {-32768, 32767};
    case DType::Int32: return {INT32_MIN, INT32_MAX};
    default: fail("integer_range: " + dtype_name(t) + " is not a quantized integer type");
  }
}

uint64_t packed_bytes(DType t, int64_t n) {
  const uint64_t bits = static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype_bits(t));
  return (bits + 7) / 8;
}

void unpack_elements(DType t, const uint8_t* packed, uint8_t* out, int64_t n) {
  const int bits = dtype_bits(t);
  if (bits >= 8) {
    if (n) std::memcpy(out, packed, static_cast<size_t>(n) * dtype_size(t));
    return;
  }
  const int per_byte = 8 / bits;
  const bool is_signed = t == DType::Int4 || t == DType::Int2;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t low = static_cast<uint8_t>((packed[i / per_byte] >> (bits * (i % per_byte))) & ((1u << bits) - 1u));
    out[i] = is_signed ? static_cast<uint8_t>(sign_extend(low, bits)) : low;
  }
}

void pack_elements(DType t, const uint8_t* elements, uint8_t* packed, int64_t n) {
  const int bits = dtype_bits(t);
  if (bits >= 8) {
    if (n) std::memcpy(packed, elements, static_cast<size_t>(n) * dtype_size(t));
    return;
  }
  const int per_byte = 8 / bits;
  std::memset(packed, 0, packed_bytes(t, n));
  for (int64_t i = 0; i < n; ++i)
    packed[i / per_byte] |= static_cast<uint8_t>((elements[i] & ((1u << bits) - 1u)) << (bits * (i % per_byte)));
}

}  // namespace mpa
