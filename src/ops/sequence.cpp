// The sequence ops: make, read, grow and shrink sequence(tensor) values (tensor/value.h), and split a tensor
// into one or join one from a sequence. Sequences are immutable once made: an op that changes one makes a
// new sequence sharing the tensors (no element is copied except by SplitToSequence and ConcatFromSequence).
#include "ops/concat.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

// Input i as a sequence; fails naming the node when it is something else.
const Value& sequence_input(const KernelContext& ctx, size_t i) {
  const ValuePtr& value = ctx.value_input(i);
  if (!value || value->kind != Value::Kind::Sequence)
    fail(ctx.node().label() + ": input " + std::to_string(i) + " must be a sequence, got " +
         (value              ? value->describe()
          : ctx.has_input(i) ? "a tensor"
                             : "no value"));
  return *value;
}

// A position input (an int32/int64 scalar), wrapped when negative, checked against [0, size] where the end
// itself may be named (`end_allowed`, SequenceInsert) or [0, size) otherwise; `fallback` when omitted.
size_t position_of(const KernelContext& ctx, size_t input, size_t size, bool end_allowed, size_t fallback) {
  const Tensor* p = ctx.optional_input(input);
  if (!p) return fallback;
  const int64_t n = static_cast<int64_t>(size);
  int64_t position = scalar_int(ctx.node(), *p, "position");
  const int64_t bound = end_allowed ? n : n - 1;
  if (position < -n || position > bound)
    fail(ctx.node().label() + ": position " + std::to_string(position) + " is outside [" + std::to_string(-n) + ", " +
         std::to_string(bound) + "] for a sequence of " + std::to_string(n) + " tensors");
  if (position < 0) position += n;
  return static_cast<size_t>(position);
}

// A tensor joining a sequence must have its element type.
void check_element(const KernelContext& ctx, const Value& sequence, const Tensor& t) {
  if (sequence.elem_type != DType::Undefined && t.dtype() != sequence.elem_type)
    fail(ctx.node().label() + ": a " + dtype_name(t.dtype()) + " tensor cannot join a sequence of " +
         dtype_name(sequence.elem_type));
}

class SequenceEmptyOp : public OpKernel {
 public:
  explicit SequenceEmptyOp(const OpInit& init)
      : dtype_(static_cast<DType>(init.get_int("dtype", static_cast<int64_t>(DType::Float32)))) {
    if (!dtype_is_supported(static_cast<int32_t>(dtype_)))
      throw UnsupportedType(init.node().label() + ": element type " + onnx_type_name(static_cast<int32_t>(dtype_)) +
                            " is not supported");
  }
  void compute(KernelContext& ctx) const override { ctx.set_value_output(0, Value::make_sequence(dtype_, {})); }

 private:
  DType dtype_;
};

class SequenceConstructOp : public OpKernel {
 public:
  explicit SequenceConstructOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    require_same_dtype(ctx, 0, ctx.num_inputs());
    std::vector<Tensor> elements;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) elements.push_back(ctx.input(i));
    const DType dtype = elements.empty() ? DType::Undefined : elements.front().dtype();
    ctx.set_value_output(0, Value::make_sequence(dtype, std::move(elements)));
  }
};

class SequenceAtOp : public OpKernel {
 public:
  explicit SequenceAtOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Value& sequence = sequence_input(ctx, 0);
    if (!ctx.has_input(1)) fail(ctx.node().label() + ": position is required");
    ctx.set_output(0, sequence.elements[position_of(ctx, 1, sequence.elements.size(), false, 0)]);
  }
};

class SequenceInsertOp : public OpKernel {
 public:
  explicit SequenceInsertOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Value& sequence = sequence_input(ctx, 0);
    const Tensor& t = ctx.input(1);
    check_element(ctx, sequence, t);
    const size_t at = position_of(ctx, 2, sequence.elements.size(), true, sequence.elements.size());
    std::vector<Tensor> elements = sequence.elements;
    elements.insert(elements.begin() + static_cast<std::ptrdiff_t>(at), t);
    ctx.set_value_output(0, Value::make_sequence(t.dtype(), std::move(elements)));
  }
};

class SequenceEraseOp : public OpKernel {
 public:
  explicit SequenceEraseOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Value& sequence = sequence_input(ctx, 0);
    const size_t n = sequence.elements.size();
    if (n == 0) fail(ctx.node().label() + ": cannot erase from an empty sequence");
    const size_t at = position_of(ctx, 1, n, false, n - 1);
    std::vector<Tensor> elements = sequence.elements;
    elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(at));
    ctx.set_value_output(0, Value::make_sequence(sequence.elem_type, std::move(elements)));
  }
};

class SequenceLengthOp : public OpKernel {
 public:
  explicit SequenceLengthOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Value& sequence = sequence_input(ctx, 0);
    allocate_checked(ctx, 0, DType::Int64, {}).data<int64_t>()[0] = static_cast<int64_t>(sequence.elements.size());
  }
};

// Splits along `axis` into parts of the sizes input 1 gives (a scalar: parts of that size, the last one
// smaller; a 1-D tensor: each part's size), or into parts of size 1, without the axis unless keepdims.
class SplitToSequenceOp : public OpKernel {
 public:
  explicit SplitToSequenceOp(const OpInit& init)
      : axis_(init.get_int("axis", 0)), keepdims_(init.get_int("keepdims", 1) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& in = ctx.input(0);
    const int64_t axis = normalize_axis(node, axis_, in.rank());
    const int64_t dim = in.dim(static_cast<int>(axis));
    std::vector<int64_t> sizes;
    bool squeeze = false;
    if (const Tensor* split = ctx.optional_input(1)) {
      const std::vector<int64_t> given = index_values(node, *split);
      if (split->rank() == 0) {
        if (given[0] <= 0) fail(node.label() + ": split size " + std::to_string(given[0]) + " is not positive");
        for (int64_t at = 0; at < dim; at += given[0]) sizes.push_back(std::min(given[0], dim - at));
      } else {
        int64_t total = 0;
        for (int64_t s : given) {
          if (s < 0) fail(node.label() + ": split " + shape_str(given) + " has a negative part");
          total += s;
        }
        if (total != dim)
          fail(node.label() + ": split " + shape_str(given) + " does not sum to the axis size " + std::to_string(dim));
        sizes = given;
      }
    } else {
      sizes.assign(static_cast<size_t>(dim), 1);
      squeeze = !keepdims_;
    }
    std::vector<Tensor> parts;
    int64_t offset = 0;
    for (int64_t size : sizes) {
      Shape shape = in.shape();
      shape[static_cast<size_t>(axis)] = size;
      Tensor part(in.dtype(), shape);
      copy_slab(part, in, axis, offset, false);
      offset += size;
      if (squeeze) shape.erase(shape.begin() + axis);
      parts.push_back(part.reshaped(shape));
    }
    ctx.set_value_output(0, Value::make_sequence(in.dtype(), std::move(parts)));
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

// Joins the sequence's tensors along `axis`, or stacks them along a new axis `axis` with new_axis = 1.
class ConcatFromSequenceOp : public OpKernel {
 public:
  explicit ConcatFromSequenceOp(const OpInit& init)
      : axis_(init.require_int("axis")), new_axis_(init.get_int("new_axis", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Value& sequence = sequence_input(ctx, 0);
    if (sequence.elements.empty()) fail(node.label() + ": cannot concatenate an empty sequence");
    const Tensor& first = sequence.elements.front();
    const int64_t axis = normalize_axis(node, axis_, first.rank() + (new_axis_ ? 1 : 0));
    Shape out_shape = first.shape();
    if (new_axis_) out_shape.insert(out_shape.begin() + axis, 0);
    const size_t a = static_cast<size_t>(axis);
    out_shape[a] = 0;
    std::vector<Tensor> parts;
    for (const Tensor& t : sequence.elements) {
      bool fits = t.dtype() == first.dtype() && t.rank() == first.rank();
      for (size_t d = 0; fits && d < first.shape().size(); ++d)
        fits = (!new_axis_ && d == a) || t.shape()[d] == first.shape()[d];
      if (!fits)
        fail(node.label() + ": a " + dtype_name(t.dtype()) + " " + shape_str(t.shape()) + " tensor cannot be " +
             (new_axis_ ? "stacked with " : "concatenated with ") + dtype_name(first.dtype()) + " " +
             shape_str(first.shape()) + " on axis " + std::to_string(axis));
      Shape shape = t.shape();
      if (new_axis_) shape.insert(shape.begin() + axis, 1);
      out_shape[a] += shape[a];
      parts.push_back(t.reshaped(shape));
    }
    Tensor& out = allocate_checked(ctx, 0, first.dtype(), out_shape);
    int64_t offset = 0;
    for (const Tensor& part : parts) {
      copy_slab(out, part, axis, offset, true);
      offset += part.dim(static_cast<int>(axis));
    }
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

}  // namespace

// Sequences hold tensors as their producers stored them and the ops only move them: exact, and the audit
// neither probes nor reruns a node that meets a sequence (runtime/session.h, meets_values).
MPA_OP_TRAITS("", "SequenceEmpty", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "SequenceEmpty", SequenceEmptyOp, 11);
MPA_OP_TRAITS("", "SequenceConstruct", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "SequenceConstruct", SequenceConstructOp, 11);
MPA_OP_TRAITS("", "SequenceAt", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "SequenceAt", SequenceAtOp, 11);
MPA_OP_TRAITS("", "SequenceInsert",
              {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {2}});
MPA_REGISTER_OP("", "SequenceInsert", SequenceInsertOp, 11);
MPA_OP_TRAITS("", "SequenceErase", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "SequenceErase", SequenceEraseOp, 11);
MPA_OP_TRAITS("", "SequenceLength", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "SequenceLength", SequenceLengthOp, 11);
MPA_OP_TRAITS("", "SplitToSequence",
              {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "SplitToSequence", SplitToSequenceOp, 11, 24);
MPA_OP_TRAITS("", "ConcatFromSequence", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "ConcatFromSequence", ConcatFromSequenceOp, 11);

}  // namespace mpa
