// Shared kernels of the elementwise op family: an op is a functor from src/kernels/ plus the element
// types it accepts, registered in one line, e.g.
//
//   MPA_REGISTER_OP("", "Sqrt", (UnaryOp<SqrtF, TypeSet::Float>), 1, 6, 13);
//
// Functors with attributes get them from make_functor<F>(init), specialised next to the registration.
// All shape handling (numpy broadcasting, legacy opset<7 'broadcast'/'axis'), type checks and the loops
// live here once; the math lives in the functors.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/elementwise.h"
#include "kernels/stored.h"
#include "ops/op.h"
#include "tensor/broadcast.h"

namespace mpa {

// [SECTION] Element type sets

enum class TypeSet { Float, Signed, Numeric, Integer, Unsigned, Bool, All };

template <TypeSet S, class T> constexpr bool type_in_set() {
  constexpr bool is_float = std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
  constexpr bool is_bool = std::is_same_v<T, bool>;
  constexpr bool is_int = std::is_integral_v<T> && !is_bool;
  switch (S) {
    case TypeSet::Float: return is_float;
    case TypeSet::Signed: return is_float || (is_int && std::is_signed_v<T>);
    case TypeSet::Numeric: return !is_bool;
    case TypeSet::Integer: return is_int;
    case TypeSet::Unsigned: return is_int && std::is_unsigned_v<T>;
    case TypeSet::Bool: return is_bool;
    case TypeSet::All: return true;
  }
  return false;
}

// Calls f(TypeTag<T>{}) for the tensor's element type when it is in the set; otherwise fails naming the
// node (the ONNX schema of the op does not allow that type).
template <TypeSet S, class F> void visit_types(const Node& node, DType t, F&& f) {
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (type_in_set<S, T>()) f(tag);
    else fail(node.label() + ": element type " + dtype_name(t) + " is not allowed for " + node.op_type);
  });
}

// The broadcast shape of the inputs, failing with the node named.
Shape broadcast_output_shape(const Node& node, const std::vector<Shape>& shapes);

// Attributes of a functor; functors with attributes specialise this next to their registration.
template <class F> F make_functor(const OpInit&) { return F{}; }

// [SECTION] Unary

// A unary op as an epilogue (ops/op.h): map_unary's loop over each block.
template <class F> class UnaryEpilogue : public Epilogue {
 public:
  explicit UnaryEpilogue(const F& f) : f_(f) {}
  void apply(float* values, int64_t n, int64_t, int64_t) const override {
    cpu::map_unary_span(values, values, n, Stored<float, F>{f_});
  }

 private:
  F f_;
};

template <class F, TypeSet S, bool kBoolOut = false> class UnaryOp : public OpKernel {
 public:
  explicit UnaryOp(const OpInit& init) : f_(make_functor<F>(init)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    visit_types<S>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Out = std::conditional_t<kBoolOut, bool, T>;
      Tensor& y = ctx.allocate_output(0, dtype_of<Out>, x.shape());
      cpu::map_unary(x.data<T>(), y.data<Out>(), x.numel(), Stored<Out, F>{f_});
    });
  }
  std::unique_ptr<Epilogue> as_epilogue(size_t from, const std::vector<const Tensor*>&, const Shape&) const override {
    if constexpr (kBoolOut || !type_in_set<S, float>())
      return nullptr;
    else
      return from == 0 ? std::make_unique<UnaryEpilogue<F>>(f_) : nullptr;
  }

 private:
  F f_;
};

// [SECTION] Binary

struct BinaryTraits {
  TypeSet types;                   // allowed types of input A (and B unless rhs_types says otherwise)
  bool bool_out = false;           // output is bool (comparisons) instead of A's type
  bool same_types = true;          // B must have A's type; false: B is any type of rhs_types (Pow)
  TypeSet rhs_types = TypeSet::All;
  bool nonzero_divisor = false;    // integer B must not contain 0 (Div, Mod)
};

// Before opset 7, binary ops broadcast B onto A only with the attribute broadcast=1, aligning B's dims
// with A's starting at 'axis' (default: trailing alignment, as numpy). Without broadcast=1 the shapes
// had to be equal, which numpy broadcasting treats identically, so only the axis form needs a rewrite.
class LegacyBroadcast {
 public:
  explicit LegacyBroadcast(const OpInit& init);
  // B's shape to use in numpy broadcasting against A.
  Shape rhs_shape(const Node& node, const Shape& a, const Shape& b) const;
  // Whether B aligns with A at an axis (not as numpy aligns it).
  bool by_axis() const { return axis_aligned_; }

 private:
  bool axis_aligned_ = false;
  int64_t axis_ = 0;
};

// Fails (naming the node) when an integer tensor holds a zero.
void require_nonzero_divisor(const Node& node, const Tensor& divisor);

// How a binary op's other operand meets a producer's output of `shape` as an epilogue: a value per place (the
// same shape), per channel (dimension 1) or one for all; nullopt for other broadcasts.
enum class OperandSpread { PerPlace, PerChannel, One };
std::optional<OperandSpread> operand_spread(const Shape& other, const Shape& shape);

// A binary op as an epilogue (ops/op.h) on its input `kFrom`: map_binary's loop over each block, the other
// operand read at the block's places, at its channel, or once.
template <class F, size_t kFrom> class BinaryEpilogue : public Epilogue {
 public:
  BinaryEpilogue(const F& f, const float* other, OperandSpread spread) : f_(f), other_(other), spread_(spread) {}
  void apply(float* values, int64_t n, int64_t channel, int64_t offset) const override {
    const bool steps = spread_ == OperandSpread::PerPlace;
    const float* other = other_ + (steps ? offset : spread_ == OperandSpread::PerChannel ? channel : 0);
    if constexpr (kFrom == 0)
      cpu::map_binary_run(values, true, other, steps, values, n, Stored<float, F>{f_});
    else
      cpu::map_binary_run(other, steps, values, true, values, n, Stored<float, F>{f_});
  }

 private:
  F f_;
  const float* other_;
  OperandSpread spread_;
};

template <class F, BinaryTraits Tr> class BinaryOp : public OpKernel {
 public:
  explicit BinaryOp(const OpInit& init) : f_(make_functor<F>(init)), legacy_(init) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Shape b_shape = legacy_.rhs_shape(node, a.shape(), b.shape());
    const Shape out_shape = broadcast_output_shape(node, {a.shape(), b_shape});
    visit_types<Tr.types>(node, a.dtype(), [&](auto a_tag) {
      using A = typename decltype(a_tag)::type;
      auto run = [&](auto b_tag) {
        using B = typename decltype(b_tag)::type;
        using Out = std::conditional_t<Tr.bool_out, bool, A>;
        if constexpr (Tr.nonzero_divisor && std::is_integral_v<B>) require_nonzero_divisor(node, b);
        Tensor& y = ctx.allocate_output(0, dtype_of<Out>, out_shape);
        cpu::map_binary(a.data<A>(), a.shape(), b.data<B>(), b_shape, y.data<Out>(), out_shape, Stored<Out, F>{f_});
      };
      if constexpr (Tr.same_types) {
        if (!(b.dtype() == a.dtype()))
          fail(node.label() + ": inputs have different element types " + dtype_name(a.dtype()) + " and " +
               dtype_name(b.dtype()));
        run(a_tag);
      } else {
        visit_types<Tr.rhs_types>(node, b.dtype(), run);
      }
    });
  }
  std::unique_ptr<Epilogue> as_epilogue(size_t from, const std::vector<const Tensor*>& inputs,
                                        const Shape& shape) const override {
    if constexpr (Tr.bool_out || !Tr.same_types || !type_in_set<Tr.types, float>()) {
      return nullptr;
    } else {
      const Tensor* other = from < 2 && inputs.size() == 2 ? inputs[1 - from] : nullptr;
      if (legacy_.by_axis() || !other || other->dtype() != DType::Float32) return nullptr;
      const std::optional<OperandSpread> spread = operand_spread(other->shape(), shape);
      if (!spread) return nullptr;
      if (from == 0) return std::make_unique<BinaryEpilogue<F, 0>>(f_, other->data<float>(), *spread);
      return std::make_unique<BinaryEpilogue<F, 1>>(f_, other->data<float>(), *spread);
    }
  }

 private:
  F f_;
  LegacyBroadcast legacy_;
};

}  // namespace mpa
