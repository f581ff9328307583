// Pad on CUDA: the CPU's attributes and geometry (ops/pad.h); constant mode fills the output and copies the
// kept box, the other modes read every output element through pad_source_index, the CPU's own rule.
#include <cstring>

#include "backends/cuda/ops/movement.cuh"
#include "ops/pad.h"

namespace mpa::cuda {

namespace {

struct PadWalk {
  int rank = 0;
  PadMode mode = PadMode::Constant;
  int64_t out[kMaxRank] = {}, in[kMaxRank] = {}, in_strides[kMaxRank] = {}, begin[kMaxRank] = {};
};

template <class U>
void fill(U* out, int64_t n, U value) {
  for_each_index(n, [=] __device__(int64_t i) { out[i] = value; });
}

template <class U>
void pad_mapped(U* out, const U* in, int64_t n, PadWalk w) {
  for_each_index(n, [=] __device__(int64_t i) {
    int64_t src = 0, rest = i;
    for (int d = w.rank - 1; d >= 0; --d) {
      const int64_t o = rest % w.out[d];
      rest /= w.out[d];
      src += pad_source_index(w.mode, o, w.begin[d], w.in[d]) * w.in_strides[d];
    }
    out[i] = in[src];
  });
}

class PadOp : public OpKernel {
 public:
  explicit PadOp(const OpInit& init) : attrs_(init) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const PadGeometry g = attrs_.geometry(ctx);
    if (g.out_shape.size() > static_cast<size_t>(kMaxRank))
      fail(ctx.node().label() + ": Pad over more than 8 dims on CUDA");
    Tensor out = running().empty(in.dtype(), g.out_shape);
    const size_t size = dtype_size(in.dtype());
    if (out.numel() > 0 && attrs_.mode() == PadMode::Constant) {
      const std::vector<std::byte> value = attrs_.fill_value(ctx, in);
      visit_elem_bytes(size, [&](auto tag) {
        using U = typename decltype(tag)::type;
        U v;
        std::memcpy(&v, value.data(), sizeof(U));
        fill(reinterpret_cast<U*>(bytes_of(out)), out.numel(), v);
      });
      const PadBox kept = pad_kept_box(in.shape(), g.out_shape, g.begin);
      copy_strided_on_device(bytes_of(out) + kept.dst_offset * int64_t(size), contiguous_strides(g.out_shape),
                             bytes_of(in) + kept.src_offset * int64_t(size), contiguous_strides(in.shape()), kept.box,
                             size);
    } else if (out.numel() > 0) {
      PadWalk w;
      w.rank = static_cast<int>(g.out_shape.size());
      w.mode = attrs_.mode();
      const std::vector<int64_t> strides = contiguous_strides(in.shape());
      for (size_t d = 0; d < g.out_shape.size(); ++d)
        w.out[d] = g.out_shape[d], w.in[d] = in.shape()[d], w.in_strides[d] = strides[d], w.begin[d] = g.begin[d];
      visit_elem_bytes(size, [&](auto tag) {
        using U = typename decltype(tag)::type;
        pad_mapped(reinterpret_cast<U*>(bytes_of(out)), reinterpret_cast<const U*>(bytes_of(in)), out.numel(), w);
      });
    }
    ctx.set_output(0, std::move(out));
  }

 private:
  PadAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "Pad", PadOp, 1, 2, 11, 13, 18, 19, 21, 23, 24, 25);

}  // namespace mpa::cuda
