// Loop: runs its body subgraph with the executor (ops/subgraph.h) while the trip count and condition allow,
// carrying state between iterations and stacking the body's scan outputs along a new first axis.
#include <limits>

#include "common/memory_budget.h"
#include "ops/subgraph.h"

namespace mpa {

namespace {

constexpr int64_t kMaxLoopIterations = int64_t{1} << 24;

class LoopOp : public OpKernel {
 public:
  explicit LoopOp(const OpInit& init) : body_(init, "body") {
    const Graph& body = body_.graph();
    const std::string label = init.node().label();
    const size_t carried = init.node().inputs.size() < 2 ? 0 : init.node().inputs.size() - 2;
    if (body.inputs.size() != carried + 2)
      fail(label + ": the body takes " + std::to_string(body.inputs.size()) + " inputs, expected 2 + " +
           std::to_string(carried) + " loop-carried values");
    if (body.outputs.size() < carried + 1)
      fail(label + ": the body returns " + std::to_string(body.outputs.size()) + " outputs, expected at least 1 + " +
           std::to_string(carried));
  }

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Graph& body = body_.graph();
    const size_t carried_count = ctx.num_inputs() < 2 ? 0 : ctx.num_inputs() - 2;
    const size_t scan_count = body.outputs.size() - 1 - carried_count;
    if (ctx.num_outputs() != carried_count + scan_count)
      fail(label + ": has " + std::to_string(ctx.num_outputs()) + " outputs, the body gives " +
           std::to_string(carried_count) + " loop-carried and " + std::to_string(scan_count) + " scan outputs");
    int64_t trips = std::numeric_limits<int64_t>::max();
    if (ctx.has_input(0)) {
      const Tensor& m = ctx.input(0);
      if (m.dtype() != DType::Int64 || m.numel() != 1) fail(label + ": trip count M must be one int64");
      trips = m.data<int64_t>()[0];
    }
    bool keep_going = ctx.has_input(1) ? condition_value(ctx.input(1), label + ": cond") : true;
    // Loop-carried sequences and optionals travel beside the tensors (tensor/value.h).
    std::vector<Tensor> carried(carried_count);
    std::vector<ValuePtr> carried_values(2 + carried_count);
    for (size_t i = 0; i < carried_count; ++i)
      if (!(carried_values[2 + i] = ctx.value_input(2 + i))) carried[i] = ctx.input(2 + i);
    std::vector<ValuePtr> out_values;
    std::vector<std::vector<Tensor>> scans(scan_count);
    std::vector<uint64_t> scan_bytes(scan_count, 0);
    for (int64_t iteration = 0; iteration < trips && keep_going; ++iteration) {
      // A bound, so that a condition that never turns false (or a trip count of 2^62) ends with an error.
      if (!(iteration < kMaxLoopIterations))
        fail(label + ": stopped after " + std::to_string(kMaxLoopIterations) +
             " iterations (mpaudit's limit; does the condition ever turn false?)");
      std::vector<Tensor> feeds;
      feeds.push_back(scalar_like(body.inputs[0], DType::Int64));
      feeds.back().data<int64_t>()[0] = iteration;
      feeds.push_back(scalar_like(body.inputs[1], DType::Bool));
      feeds.back().data<bool>()[0] = keep_going;
      feeds.insert(feeds.end(), carried.begin(), carried.end());
      std::vector<Tensor> out = body_.run(feeds, ctx, iteration, carried_values, &out_values);
      keep_going = condition_value(out[0], label + ": the body's condition output");
      for (size_t i = 0; i < carried_count; ++i) {
        carried[i] = std::move(out[1 + i]);
        carried_values[2 + i] = std::move(out_values[1 + i]);
      }
      for (size_t k = 0; k < scan_count; ++k) {
        if (out_values[1 + carried_count + k]) fail(label + ": a scan output of the body is a sequence or optional");
        scans[k].push_back(std::move(out[1 + carried_count + k]));
        // Stacking copies the slices once more: what is held so far must fit again, or the loop stops here
        // with the output named, long before the machine runs out.
        scan_bytes[k] += scans[k].back().nbytes();
        memory_budget::require(label + ": stacking scan output '" + ctx.node().outputs[carried_count + k] + "' (" +
                                   std::to_string(iteration + 1) + " iterations so far)",
                               scan_bytes[k]);
      }
    }
    for (size_t i = 0; i < carried_count; ++i)
      if (carried_values[2 + i])
        ctx.set_value_output(i, std::move(carried_values[2 + i]));
      else
        ctx.set_output(i, std::move(carried[i]));
    for (size_t k = 0; k < scan_count; ++k) {
      if (!scans[k].empty()) {
        ctx.set_output(carried_count + k, stack_along(scans[k], 0, label));
        continue;
      }
      // No iteration ran: an empty stack, element shape and type as the body declares them.
      const ValueInfo& declared = body.outputs[1 + carried_count + k];
      Shape shape{0};
      for (int64_t d : declared.dims) shape.push_back(std::max<int64_t>(d, 0));
      const DType dtype = declared.elem_type ? static_cast<DType>(declared.elem_type) : DType::Float32;
      ctx.allocate_output(carried_count + k, dtype, shape);
    }
  }

 private:
  SubgraphRunner body_;
};

}  // namespace

MPA_OP_TRAITS("", "Loop", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Loop", LoopOp, 1, 11, 13, 16, 19, 21);

}  // namespace mpa
