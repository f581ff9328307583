// What the control-flow ops (If, Loop, Scan) share: running a subgraph through the executor
// (SubgraphExecutor, ops/op.h), in the precision and math of the node that owns it, so a low-precision run computes the branches and loop
// bodies in that precision too; and slicing/stacking tensors along an axis for iterations.
#pragma once
#include <memory>
#include <vector>

#include "ops/op.h"

namespace mpa {

class SubgraphRunner {
 public:
  SubgraphRunner(const OpInit& init, const std::string& attribute);
  ~SubgraphRunner();
  const Graph& graph() const { return *graph_; }
  // Runs the subgraph on `inputs` (one per declared input, in order) under ctx's settings, reading outer
  // values through ctx's scope and shown to ctx's observer as run `iteration` of the node's loop (0 for
  // If); returns the declared outputs in order. Sequence/optional values (tensor/value.h) go in through
  // `value_inputs` (where set, they stand for the input) and come back in `value_outputs` (where set, the
  // returned tensor is undefined); without `value_outputs`, such an output fails.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const KernelContext& ctx, int64_t iteration = 0,
                          const std::vector<ValuePtr>& value_inputs = {},
                          std::vector<ValuePtr>* value_outputs = nullptr) const;

 private:
  std::shared_ptr<const Graph> graph_;
  std::string attribute_;  // the owning node's graph attribute holding the subgraph
  std::string owner_;      // the owning node's label, for errors
};

// A scalar tensor shaped as `declared` says (rank 0 or [1]), for a loop body's iteration number and condition.
Tensor scalar_like(const ValueInfo& declared, DType dtype);
// The first element of a boolean or numeric tensor as a condition; fails naming `what` when it has none.
bool condition_value(const Tensor& t, const std::string& what);
// Element `index` along `axis` (the axis removed).
Tensor slice_along(const Tensor& t, int64_t axis, int64_t index);
// Equal-shaped tensors stacked along a new axis `axis` of the result (in order).
Tensor stack_along(const std::vector<Tensor>& parts, int64_t axis, const std::string& what);

}  // namespace mpa
