// BitCast (26): the input's bits reinterpreted as another type of the same width, shape kept. Whole-byte
// types share the bytes; the sub-byte types (held a byte per element, dtype.h) keep their low bits and
// are sign-extended anew for int4/int2.
#include <cstring>

#include "ops/cast.h"
#include "tensor/narrow.h"

namespace mpa {

namespace {

class BitCastOp : public OpKernel {
 public:
  explicit BitCastOp(const OpInit& init) : to_(cast_target(init)) {}

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& x = ctx.input(0);
    if (dtype_bits(x.dtype()) != dtype_bits(to_))
      fail(who + ": cannot reinterpret " + dtype_name(x.dtype()) + " (" + std::to_string(dtype_bits(x.dtype())) +
           " bits) as " + dtype_name(to_) + " (" + std::to_string(dtype_bits(to_)) + " bits)");
    Tensor& y = ctx.allocate_output(0, to_, x.shape());
    const uint8_t* in = static_cast<const uint8_t*>(x.raw());
    uint8_t* out = static_cast<uint8_t*>(y.raw());
    const int64_t n = x.numel();
    if (dtype_bits(to_) < 8) {
      for (int64_t i = 0; i < n; ++i)
        out[i] = dtype_is_narrow_float(to_) ? in[i] & 0xF : wrap_to_narrow_int(to_, in[i]);
      return;
    }
    if (to_ == DType::Bool)  // a C++ bool must hold 0 or 1
      for (int64_t i = 0; i < n; ++i)
        if (in[i] > 1)
          fail(who + ": byte " + std::to_string(in[i]) + " at element " + std::to_string(i) + " is not a bool");
    if (n) std::memcpy(out, in, x.nbytes());
  }

 private:
  DType to_;
};

}  // namespace

// Moves bits, rounds nothing; the values it gives are no input values (not rounding_commutes).
MPA_OP_TRAITS("", "BitCast", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "BitCast", BitCastOp, 26);

}  // namespace mpa
