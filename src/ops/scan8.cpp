// Scan in opset 8: states and scan inputs carry a leading batch axis, the scan axis is axis 1, and an
// optional per-row sequence length (input 0) ends shorter rows early. The body runs per batch row with the
// executor (ops/subgraph.h); scan outputs of rows shorter than the longest are zero past their length.
#include <cstring>

#include "ops/subgraph.h"

namespace mpa {

namespace {

class Scan8Op : public OpKernel {
 public:
  explicit Scan8Op(const OpInit& init)
      : body_(init, "body"), scan_inputs_(init.require_int("num_scan_inputs")), directions_(init.get_ints("directions")) {
    const std::string label = init.node().label();
    const int64_t inputs = int64_t(init.node().inputs.size()) - 1;  // after sequence_lens
    if (scan_inputs_ < 1 || scan_inputs_ > inputs)
      fail(label + ": num_scan_inputs " + std::to_string(scan_inputs_) + " does not fit its " + std::to_string(inputs) +
           " state and scan inputs");
    if (int64_t(body_.graph().inputs.size()) != inputs)
      fail(label + ": the body takes " + std::to_string(body_.graph().inputs.size()) + " inputs, the node gives " +
           std::to_string(inputs));
  }

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const size_t states = ctx.num_inputs() - 1 - size_t(scan_inputs_);
    const size_t scan_outputs = body_.graph().outputs.size() - states;
    if (ctx.num_outputs() != states + scan_outputs)
      fail(label + ": has " + std::to_string(ctx.num_outputs()) + " outputs, the body gives " +
           std::to_string(states + scan_outputs));
    const Tensor& first = ctx.input(1 + states);
    if (first.rank() < 2) fail(label + ": scan inputs need [batch, sequence, ...] dimensions");
    const int64_t batch = first.dim(0), steps = first.dim(1);
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      const bool scanned = i > states;
      if (x.rank() < (scanned ? 2 : 1) || x.dim(0) != batch || (scanned && x.dim(1) != steps))
        fail(label + ": input " + std::to_string(i) + " has shape " + shape_str(x.shape()) + ", expected [" +
             std::to_string(batch) + (scanned ? ", " + std::to_string(steps) : std::string()) + ", ...]");
    }
    const std::vector<int64_t> lengths = sequence_lengths(ctx, batch, steps);

    std::vector<std::vector<Tensor>> final_states(states), rows(scan_outputs);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> carried;
      for (size_t i = 0; i < states; ++i) carried.push_back(slice_along(ctx.input(1 + i), 0, b));
      std::vector<Tensor> sequences;
      for (int64_t j = 0; j < scan_inputs_; ++j) sequences.push_back(slice_along(ctx.input(1 + states + size_t(j)), 0, b));
      std::vector<std::vector<Tensor>> stepped(scan_outputs);
      const int64_t length = lengths[size_t(b)];
      for (int64_t t = 0; t < length; ++t) {
        std::vector<Tensor> feeds = carried;
        for (int64_t j = 0; j < scan_inputs_; ++j) {
          const bool reverse = j < int64_t(directions_.size()) && directions_[size_t(j)] != 0;
          feeds.push_back(slice_along(sequences[size_t(j)], 0, reverse ? length - 1 - t : t));
        }
        std::vector<Tensor> out = body_.run(feeds, ctx, b * steps + t);
        for (size_t i = 0; i < states; ++i) carried[i] = std::move(out[i]);
        for (size_t k = 0; k < scan_outputs; ++k) stepped[k].push_back(std::move(out[states + k]));
      }
      for (size_t i = 0; i < states; ++i) final_states[i].push_back(std::move(carried[i]));
      for (size_t k = 0; k < scan_outputs; ++k) rows[k].push_back(padded_row(stepped[k], steps, label));
    }
    for (size_t i = 0; i < states; ++i) ctx.set_output(i, stack_along(final_states[i], 0, label));
    for (size_t k = 0; k < scan_outputs; ++k) ctx.set_output(states + k, stack_along(rows[k], 0, label));
  }

 private:
  std::vector<int64_t> sequence_lengths(const KernelContext& ctx, int64_t batch, int64_t steps) const {
    std::vector<int64_t> lengths(size_t(batch), steps);
    if (!ctx.has_input(0)) return lengths;
    const Tensor& lens = ctx.input(0);
    if (lens.dtype() != DType::Int64 || lens.numel() != batch)
      fail(ctx.node().label() + ": sequence_lens must be " + std::to_string(batch) + " int64 values, got " +
           dtype_name(lens.dtype()) + " " + shape_str(lens.shape()));
    for (int64_t b = 0; b < batch; ++b) {
      lengths[size_t(b)] = lens.data<int64_t>()[b];
      if (lengths[size_t(b)] < 0 || lengths[size_t(b)] > steps)
        fail(ctx.node().label() + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lengths[size_t(b)]) +
             " is outside [0, " + std::to_string(steps) + "]");
    }
    return lengths;
  }

  // One row's per-step outputs stacked to [steps, ...], zero past the row's own length.
  static Tensor padded_row(const std::vector<Tensor>& stepped, int64_t steps, const std::string& label) {
    if (stepped.empty()) fail(label + ": a batch row of length 0 leaves its scan output without a shape");
    const Tensor row = stack_along(stepped, 0, label);
    if (int64_t(stepped.size()) == steps) return row;
    Shape shape = row.shape();
    shape[0] = steps;
    Tensor out(row.dtype(), shape);
    std::memset(out.raw(), 0, out.nbytes());
    std::memcpy(out.raw(), row.raw(), row.nbytes());
    return out;
  }

  SubgraphRunner body_;
  int64_t scan_inputs_;
  std::vector<int64_t> directions_;
};

}  // namespace

MPA_REGISTER_OP("", "Scan", Scan8Op, 8);

}  // namespace mpa
