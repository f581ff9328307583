// Scan (opset 9 on): runs its body subgraph with the executor (ops/subgraph.h) once per slice of the scan
// inputs along their scan axes, in either direction, carrying state and stacking the per-step outputs.
#include <algorithm>

#include "ops/subgraph.h"

namespace mpa {

namespace {

int64_t normalized_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    fail(what + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

class ScanOp : public OpKernel {
 public:
  explicit ScanOp(const OpInit& init)
      : body_(init, "body"),
        scan_inputs_(init.require_int("num_scan_inputs")),
        input_axes_(init.get_ints("scan_input_axes")),
        input_directions_(init.get_ints("scan_input_directions")),
        output_axes_(init.get_ints("scan_output_axes")),
        output_directions_(init.get_ints("scan_output_directions")) {
    const std::string label = init.node().label();
    const int64_t inputs = int64_t(init.node().inputs.size());
    if (scan_inputs_ < 1 || scan_inputs_ > inputs)
      fail(label + ": num_scan_inputs " + std::to_string(scan_inputs_) + " does not fit its " + std::to_string(inputs) +
           " inputs");
    if (int64_t(body_.graph().inputs.size()) != inputs)
      fail(label + ": the body takes " + std::to_string(body_.graph().inputs.size()) + " inputs, the node gives " +
           std::to_string(inputs));
  }

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const size_t states = ctx.num_inputs() - size_t(scan_inputs_);
    const size_t scan_outputs = body_.graph().outputs.size() - states;
    if (ctx.num_outputs() != states + scan_outputs)
      fail(label + ": has " + std::to_string(ctx.num_outputs()) + " outputs, the body gives " +
           std::to_string(states + scan_outputs));
    int64_t steps = -1;
    std::vector<int64_t> axes(static_cast<size_t>(scan_inputs_));
    for (int64_t j = 0; j < scan_inputs_; ++j) {
      const Tensor& x = ctx.input(states + size_t(j));
      axes[size_t(j)] = normalized_axis(j < int64_t(input_axes_.size()) ? input_axes_[size_t(j)] : 0, x.rank(), label);
      const int64_t length = x.dim(size_t(axes[size_t(j)]));
      if (steps >= 0 && length != steps)
        fail(label + ": scan inputs have " + std::to_string(steps) + " and " + std::to_string(length) + " steps");
      steps = length;
    }
    std::vector<Tensor> carried;
    for (size_t i = 0; i < states; ++i) carried.push_back(ctx.input(i));
    std::vector<std::vector<Tensor>> stacked(scan_outputs);
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<Tensor> feeds = carried;
      for (int64_t j = 0; j < scan_inputs_; ++j) {
        const bool reverse = j < int64_t(input_directions_.size()) && input_directions_[size_t(j)] != 0;
        feeds.push_back(slice_along(ctx.input(states + size_t(j)), axes[size_t(j)], reverse ? steps - 1 - t : t));
      }
      std::vector<Tensor> out = body_.run(feeds, ctx, t);
      for (size_t i = 0; i < states; ++i) carried[i] = std::move(out[i]);
      for (size_t k = 0; k < scan_outputs; ++k) stacked[k].push_back(std::move(out[states + k]));
    }
    for (size_t i = 0; i < states; ++i) ctx.set_output(i, std::move(carried[i]));
    for (size_t k = 0; k < scan_outputs; ++k) {
      if (stacked[k].empty()) fail(label + ": no scan steps to stack (scan inputs of length 0)");
      if (k < output_directions_.size() && output_directions_[k] != 0)
        std::reverse(stacked[k].begin(), stacked[k].end());
      const int64_t axis =
          normalized_axis(k < output_axes_.size() ? output_axes_[k] : 0, stacked[k][0].rank() + 1, label);
      ctx.set_output(states + k, stack_along(stacked[k], axis, label));
    }
  }

 private:
  SubgraphRunner body_;
  int64_t scan_inputs_;
  std::vector<int64_t> input_axes_, input_directions_, output_axes_, output_directions_;
};

}  // namespace

MPA_OP_TRAITS("", "Scan", {.precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "Scan", ScanOp, 9, 11, 16, 19, 21);

}  // namespace mpa
