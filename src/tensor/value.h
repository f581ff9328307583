// ONNX's non-tensor values that mpaudit runs: sequence(tensor) and optional(tensor or sequence(tensor)).
// They travel beside tensors, boxed in shared pointers and never changed once made, so the executor's
// tensor path (and every report of a tensor-only model) stays as it was: only nodes that read or make such
// a value see one (KernelContext::value_input, set_value_output). They live on the host, hold tensors
// already stored in their producer's format, and are neither converted nor probed by the audit: the ops
// that take tensors out of them (SequenceAt, ConcatFromSequence, OptionalGetElement) store and show theirs.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mpa {

struct Value;
using ValuePtr = std::shared_ptr<const Value>;
using ValueMap = std::map<std::string, ValuePtr>;

struct Value {
  enum class Kind : uint8_t { Sequence, Optional };
  Kind kind = Kind::Sequence;
  // A sequence's element type, known also when it is empty (Undefined: not declared).
  DType elem_type = DType::Undefined;
  std::vector<Tensor> elements;  // a sequence's tensors
  // What an optional holds: a tensor, a sequence, or neither.
  Tensor tensor;
  ValuePtr sequence;

  bool has_element() const { return tensor.defined() || sequence != nullptr; }

  static ValuePtr make_sequence(DType elem_type, std::vector<Tensor> elements) {
    auto v = std::make_shared<Value>();
    v->elem_type = elem_type;
    v->elements = std::move(elements);
    return v;
  }
  // An optional holding `tensor` (none when undefined) or `sequence` (none when null).
  static ValuePtr make_optional(Tensor tensor, ValuePtr sequence = nullptr) {
    auto v = std::make_shared<Value>();
    v->kind = Kind::Optional;
    v->tensor = std::move(tensor);
    v->sequence = std::move(sequence);
    return v;
  }
  // "a sequence of 3 tensors", "an empty optional", for messages.
  std::string describe() const {
    if (kind == Kind::Sequence) return "a sequence of " + std::to_string(elements.size()) + " tensors";
    return tensor.defined() ? "an optional holding a tensor"
           : sequence       ? "an optional holding a sequence"
                            : "an empty optional";
  }
};

}  // namespace mpa
