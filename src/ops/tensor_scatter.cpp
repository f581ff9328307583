// TensorScatter (24): a KV-cache update. Writes update's entries along `axis` into a copy of past_cache at
// positions write_indices[b] + s of each batch entry b (wrapping around the cache in "circular" mode).
#include "common/parallel.h"
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

class TensorScatterOp : public OpKernel {
 public:
  explicit TensorScatterOp(const OpInit& init)
      : axis_(init.get_int("axis", -2)), circular_(init.get_string("mode", "linear") == "circular") {
    const std::string mode = init.get_string("mode", "linear");
    if (mode != "linear" && mode != "circular")
      fail(init.node().label() + ": mode '" + mode + "' is not linear or circular");
  }

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& cache = ctx.input(0);
    const Tensor& update = ctx.input(1);
    if (update.dtype() != cache.dtype())
      fail(node.label() + ": update is " + dtype_name(update.dtype()) + ", past_cache " + dtype_name(cache.dtype()));
    const int64_t axis = normalize_axis(node, axis_, cache.rank());
    if (axis == 0) fail(node.label() + ": axis 0 is the batch axis, which cannot be the sequence axis");
    bool fits = update.rank() == cache.rank();
    for (int d = 0; fits && d < cache.rank(); ++d)
      fits = d == axis ? update.dim(d) <= cache.dim(d) : update.dim(d) == cache.dim(d);
    if (!fits)
      fail(node.label() + ": update " + shape_str(update.shape()) + " does not fit past_cache " +
           shape_str(cache.shape()) + " along axis " + std::to_string(axis));
    const int64_t batch = cache.dim(0), capacity = cache.dim(int(axis)), length = update.dim(int(axis));
    std::vector<int64_t> starts(size_t(batch), 0);
    if (const Tensor* w = ctx.optional_input(2)) {
      starts = index_values(node, *w);
      if (int64_t(starts.size()) != batch)
        fail(node.label() + ": write_indices has " + std::to_string(starts.size()) + " entries for a batch of " +
             std::to_string(batch));
    }
    for (int64_t start : starts)
      if (start < 0 || (!circular_ && start + length > capacity))
        fail(node.label() + ": writing " + std::to_string(length) + " entries at " + std::to_string(start) +
             " leaves a cache of " + std::to_string(capacity));
    Tensor& out = allocate_checked(ctx, 0, cache.dtype(), cache.shape());
    std::memcpy(out.raw(), cache.raw(), cache.nbytes());
    if (update.numel() == 0) return;
    // Every (outer index, sequence position) pair moves one contiguous block of the dims after the axis.
    const std::vector<int64_t> cache_strides = contiguous_strides(cache.shape());
    const int64_t inner = cache_strides[size_t(axis)];
    const int64_t outer = cache.numel() / (capacity * inner);
    const int64_t per_batch = outer / batch;
    const size_t bytes = size_t(inner) * dtype_size(cache.dtype());
    parallel_for(outer * length, std::max<int64_t>(1, 65536 / inner), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t o = i / length, s = i % length;
        const int64_t position = (starts[size_t(o / per_batch)] + s) % capacity;
        std::memcpy(element_ptr(out, (o * capacity + position) * inner), element_ptr(update, (o * length + s) * inner),
                    bytes);
      }
    });
  }

 private:
  int64_t axis_;
  bool circular_;
};

}  // namespace

MPA_OP_TRAITS("", "TensorScatter", {.rounding_commutes = true, .precision = PrecisionClass::Exact, .host_inputs = {2}});
MPA_REGISTER_OP("", "TensorScatter", TensorScatterOp, 24);

}  // namespace mpa
