// If: runs the then- or else-branch subgraph with the executor (ops/subgraph.h) and returns its outputs.
#include "ops/subgraph.h"

namespace mpa {

namespace {

class IfOp : public OpKernel {
 public:
  explicit IfOp(const OpInit& init) : then_(init, "then_branch"), else_(init, "else_branch") {}

  void compute(KernelContext& ctx) const override {
    const bool take_then = condition_value(ctx.input(0), ctx.node().label() + ": cond");
    const SubgraphRunner& branch = take_then ? then_ : else_;
    std::vector<ValuePtr> values;
    std::vector<Tensor> outputs = branch.run({}, ctx, 0, {}, &values);
    if (outputs.size() != ctx.num_outputs())
      fail(ctx.node().label() + ": the " + (take_then ? "then" : "else") + " branch has " +
           std::to_string(outputs.size()) + " outputs, the node " + std::to_string(ctx.num_outputs()));
    for (size_t i = 0; i < outputs.size(); ++i)
      if (values[i])
        ctx.set_value_output(i, std::move(values[i]));
      else
        ctx.set_output(i, std::move(outputs[i]));
  }

 private:
  SubgraphRunner then_, else_;
};

}  // namespace

MPA_OP_TRAITS("", "If", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "If", IfOp, 1, 11, 13, 16, 19, 21);

}  // namespace mpa
