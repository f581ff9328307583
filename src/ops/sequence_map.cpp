// SequenceMap: runs its body subgraph once per element of the input sequences (ops/subgraph.h), feeding
// element i of each sequence input and every tensor input as it is, and gathers each body output into an
// output sequence.
#include "ops/subgraph.h"

namespace mpa {

namespace {

class SequenceMapOp : public OpKernel {
 public:
  explicit SequenceMapOp(const OpInit& init) : body_(init, "body") {
    const Node& node = init.node();
    if (body_.graph().inputs.size() != node.inputs.size())
      fail(node.label() + ": the body takes " + std::to_string(body_.graph().inputs.size()) + " inputs, the node has " +
           std::to_string(node.inputs.size()));
    if (body_.graph().outputs.size() != node.outputs.size())
      fail(node.label() + ": the body returns " + std::to_string(body_.graph().outputs.size()) +
           " outputs, the node has " + std::to_string(node.outputs.size()));
  }

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const ValuePtr& first = ctx.value_input(0);
    if (!first || first->kind != Value::Kind::Sequence) fail(node.label() + ": input 0 must be a sequence");
    const size_t length = first->elements.size();
    std::vector<const Value*> sequences(ctx.num_inputs(), nullptr);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ValuePtr& value = ctx.value_input(i);
      if (!value) continue;
      if (value->kind != Value::Kind::Sequence)
        fail(node.label() + ": input " + std::to_string(i) + " is " + value->describe() + ", not a sequence or tensor");
      if (value->elements.size() != length)
        fail(node.label() + ": input " + std::to_string(i) + " has " + std::to_string(value->elements.size()) +
             " tensors, input 0 " + std::to_string(length));
      sequences[i] = value.get();
    }
    std::vector<std::vector<Tensor>> gathered(ctx.num_outputs());
    std::vector<ValuePtr> out_values;
    for (size_t iteration = 0; iteration < length; ++iteration) {
      std::vector<Tensor> feeds;
      for (size_t i = 0; i < ctx.num_inputs(); ++i)
        feeds.push_back(sequences[i] ? sequences[i]->elements[iteration] : ctx.input(i));
      std::vector<Tensor> out = body_.run(feeds, ctx, static_cast<int64_t>(iteration), {}, &out_values);
      for (size_t o = 0; o < out.size(); ++o) {
        if (out_values[o]) fail(node.label() + ": body output " + std::to_string(o) + " is not a tensor");
        gathered[o].push_back(std::move(out[o]));
      }
    }
    for (size_t o = 0; o < gathered.size(); ++o) {
      const DType declared = static_cast<DType>(body_.graph().outputs[o].elem_type);
      const DType dtype = gathered[o].empty() ? declared : gathered[o].front().dtype();
      ctx.set_value_output(o, Value::make_sequence(dtype, std::move(gathered[o])));
    }
  }

 private:
  SubgraphRunner body_;
};

}  // namespace

MPA_OP_TRAITS("", "SequenceMap", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "SequenceMap", SequenceMapOp, 17);

}  // namespace mpa
