// Runtime dtype -> compile-time type dispatch. The visitor receives TypeTag<T>.
#pragma once
#include "common/error.h"
#include "tensor/dtype.h"

namespace mpa {

// A model may hold narrow types anywhere, but only the conversion ops compute on them: another op refuses
// one as an unsupported type (not as a broken model), and fails with `message` on anything else.
[[noreturn]] inline void fail_element_type(DType t, const std::string& message) {
  if (dtype_is_narrow(t)) throw UnsupportedType("element type " + dtype_name(t) + " is not supported by this op");
  fail(message);
}

// Every stored numeric type, including bool.
template <class F> decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Float16: return f(TypeTag<Float16>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Int8: return f(TypeTag<int8_t>{});
    case DType::Int16: return f(TypeTag<int16_t>{});
    case DType::Int32: return f(TypeTag<int32_t>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::UInt8: return f(TypeTag<uint8_t>{});
    case DType::UInt16: return f(TypeTag<uint16_t>{});
    case DType::UInt32: return f(TypeTag<uint32_t>{});
    case DType::UInt64: return f(TypeTag<uint64_t>{});
    case DType::Bool: return f(TypeTag<bool>{});
    default: fail_element_type(t, "unsupported element type " + dtype_name(t));
  }
}

// Numeric types without bool (arithmetic ops).
template <class F> decltype(auto) visit_numeric(DType t, F&& f) {
  require(t != DType::Bool, "arithmetic on bool tensors is not defined");
  return visit_dtype(t, std::forward<F>(f));
}

// Floating types only (transcendental ops, normalizations).
template <class F> decltype(auto) visit_float(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Float16: return f(TypeTag<Float16>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    default: fail_element_type(t, "expects a floating-point tensor, got " + dtype_name(t));
  }
}

}  // namespace mpa
