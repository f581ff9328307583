// ReverseSequence (10): reverses the first sequence_lens[b] elements along time_axis of each batch entry b
// (along batch_axis); the rest stay in place.
#include "common/parallel.h"
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

class ReverseSequenceOp : public OpKernel {
 public:
  explicit ReverseSequenceOp(const OpInit& init)
      : batch_axis_(init.get_int("batch_axis", 1)), time_axis_(init.get_int("time_axis", 0)) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) fail(node.label() + ": input must have rank >= 2, got " + shape_str(x.shape()));
    const int64_t batch_axis = normalize_axis(node, batch_axis_, x.rank(), "batch_axis");
    const int64_t time_axis = normalize_axis(node, time_axis_, x.rank(), "time_axis");
    if (batch_axis == time_axis || batch_axis > 1 || time_axis > 1)
      fail(node.label() + ": batch_axis and time_axis must be 0 and 1 in some order");
    const std::vector<int64_t> lens = index_values(node, ctx.input(1));
    const int64_t batch = x.dim(static_cast<int>(batch_axis)), steps = x.dim(static_cast<int>(time_axis));
    if (static_cast<int64_t>(lens.size()) != batch)
      fail(node.label() + ": sequence_lens has " + std::to_string(lens.size()) + " entries for a batch of " +
           std::to_string(batch));
    for (int64_t len : lens)
      if (len < 0 || len > steps)
        fail(node.label() + ": sequence length " + std::to_string(len) + " is outside [0, " + std::to_string(steps) +
             "]");
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), x.shape());
    const std::vector<int64_t> strides = contiguous_strides(x.shape());
    const int64_t batch_stride = strides[size_t(batch_axis)], time_stride = strides[size_t(time_axis)];
    // Axes 0 and 1 are batch and time: every (batch, step) pair moves one contiguous block of `inner` elements.
    const int64_t inner = strides[1];
    const size_t elem = dtype_size(x.dtype());
    parallel_for(batch * steps, std::max<int64_t>(1, 65536 / std::max<int64_t>(inner, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t i = begin; i < end; ++i) {
                     const int64_t b = i / steps, t = i % steps;
                     const int64_t from = t < lens[size_t(b)] ? lens[size_t(b)] - 1 - t : t;
                     std::memcpy(element_ptr(y, b * batch_stride + t * time_stride),
                                 element_ptr(x, b * batch_stride + from * time_stride), size_t(inner) * elem);
                   }
                 });
  }

 private:
  int64_t batch_axis_, time_axis_;
};

}  // namespace

MPA_OP_TRAITS("", "ReverseSequence",
              {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {1}});
MPA_REGISTER_OP("", "ReverseSequence", ReverseSequenceOp, 10);

}  // namespace mpa
