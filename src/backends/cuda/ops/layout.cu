// Data movement on CUDA: Transpose, Slice, Expand, Concat, Gather and Where move elements of a known byte
// size (bit-exact whatever the type); Clip runs the CPU's ClipF. Shapes, attributes, index validation and
// bounds are the CPU's (ops/slice.h, ops/shape_helpers.h, tensor/broadcast.h), read on the host: the
// shape, bounds and index inputs are host inputs (OpTraits::host_inputs).

#include "backends/cuda/launch.cuh"
#include "backends/cuda/ops/elementwise.cuh"
#include "backends/cuda/ops/movement.cuh"
#include "ops/clip.h"
#include "ops/concat.h"
#include "ops/copy_strided.h"
#include "ops/gather.h"
#include "ops/shape_helpers.h"
#include "ops/slice.h"
#include "ops/transpose.h"
#include "ops/where.h"
#include "tensor/broadcast.h"

namespace mpa::cuda {

namespace {

class TransposeOp : public OpKernel {
 public:
  explicit TransposeOp(const OpInit& init) : attrs_(init) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const std::vector<int64_t> perm = attrs_.perm(ctx.node(), in.shape());
    const std::vector<int64_t> in_strides = contiguous_strides(in.shape());
    Shape out_shape(perm.size());
    std::vector<int64_t> src_strides(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) {
      out_shape[d] = in.shape()[static_cast<size_t>(perm[d])];
      src_strides[d] = in_strides[static_cast<size_t>(perm[d])];
    }
    Tensor out = running().empty(in.dtype(), out_shape);
    copy_strided_on_device(bytes_of(out), contiguous_strides(out_shape), bytes_of(in), src_strides, out_shape,
                           dtype_size(in.dtype()));
    ctx.set_output(0, std::move(out));
  }

 private:
  TransposeAttrs attrs_;
};

class SliceOp : public OpKernel {
 public:
  explicit SliceOp(const OpInit& init) : attrs_(init) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const SliceView view = attrs_.view(ctx);
    Tensor out = running().empty(in.dtype(), view.out_shape);
    const size_t size = dtype_size(in.dtype());
    if (out.numel() > 0)
      copy_strided_on_device(bytes_of(out), contiguous_strides(view.out_shape),
                             bytes_of(in) + view.src_offset * int64_t(size), view.src_strides, view.out_shape, size);
    ctx.set_output(0, std::move(out));
  }

 private:
  SliceAttrs attrs_;
};

class ExpandOp : public OpKernel {
 public:
  explicit ExpandOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& in = ctx.input(0);
    const Shape target = index_values(node, ctx.input(1));
    for (int64_t d : target)
      if (d < 0) fail(node.label() + ": shape " + shape_str(target) + " has a negative dimension");
    const Shape out_shape = broadcast_output_shape(node, {in.shape(), target});
    const size_t rank = out_shape.size(), offset = rank - in.shape().size();
    const std::vector<int64_t> in_strides = contiguous_strides(in.shape());
    std::vector<int64_t> src_strides(rank, 0);
    for (size_t d = offset; d < rank; ++d) src_strides[d] = in.shape()[d - offset] == 1 ? 0 : in_strides[d - offset];
    Tensor out = running().empty(in.dtype(), out_shape);
    copy_strided_on_device(bytes_of(out), contiguous_strides(out_shape), bytes_of(in), src_strides, out_shape,
                           dtype_size(in.dtype()));
    ctx.set_output(0, std::move(out));
  }
};

class ConcatOp : public OpKernel {
 public:
  explicit ConcatOp(const OpInit& init)
      : axis_(init.opset() < 4 ? init.get_int("axis", 1) : init.require_int("axis")) {}
  void compute(KernelContext& ctx) const override {
    const ConcatGeometry g = concat_geometry(ctx, axis_);
    const Tensor& first = ctx.input(0);
    const Shape& out_shape = g.out_shape;
    const size_t axis = static_cast<size_t>(g.axis), n = ctx.num_inputs();
    Tensor out = running().empty(first.dtype(), out_shape);
    const size_t size = dtype_size(first.dtype());
    const std::vector<int64_t> out_strides = contiguous_strides(out_shape);
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = ctx.input(i);
      copy_strided_on_device(bytes_of(out) + offset * out_strides[static_cast<size_t>(axis)] * int64_t(size),
                             out_strides, bytes_of(t), contiguous_strides(t.shape()), t.shape(), size);
      offset += t.shape()[axis];
    }
    ctx.set_output(0, std::move(out));
  }

 private:
  int64_t axis_;
};

template <class U>
void gather_rows(U* out, const U* data, const int64_t* rows, int64_t count, int64_t outer, int64_t dim, int64_t inner) {
  for_each_index(outer * count * inner, [=] __device__(int64_t i) {
    const int64_t e = i % inner, j = (i / inner) % count, o = i / (inner * count);
    out[i] = data[(o * dim + rows[j]) * inner + e];
  });
}

class GatherOp : public OpKernel {
 public:
  explicit GatherOp(const OpInit& init) : axis_(init.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const GatherGeometry g = gather_geometry(ctx.node(), axis_, data, ctx.input(1));  // indices: a host input
    const std::vector<int64_t>& rows = g.rows;
    Tensor out = running().empty(data.dtype(), g.out_shape);
    if (out.numel() > 0) {
      std::shared_ptr<std::byte[]> d_rows = running().allocate(rows.size() * sizeof(int64_t));
      check(cudaMemcpyAsync(d_rows.get(), rows.data(), rows.size() * sizeof(int64_t), cudaMemcpyHostToDevice,
                            running().stream()),
            "Gather indices");
      visit_elem_bytes(dtype_size(data.dtype()), [&](auto tag) {
        using U = typename decltype(tag)::type;
        gather_rows(reinterpret_cast<U*>(bytes_of(out)), reinterpret_cast<const U*>(bytes_of(data)),
                    reinterpret_cast<const int64_t*>(d_rows.get()), static_cast<int64_t>(rows.size()), g.outer, g.dim,
                    g.inner);
      });
    }
    ctx.set_output(0, std::move(out));
  }

 private:
  int64_t axis_;
};

template <class U>
void where(const bool* c, const U* x, const U* y, U* out, int64_t n, BroadcastIndex index) {
  for_each_index(n, [=] __device__(int64_t i) {
    int64_t off[3];
    index.offsets(i, off, 3);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  });
}

class WhereOp : public OpKernel {
 public:
  explicit WhereOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    const Shape out_shape = where_output_shape(ctx);
    Tensor out = running().empty(x.dtype(), out_shape);
    const BroadcastIndex index = broadcast_index(out_shape, {c.shape(), x.shape(), y.shape()});
    visit_elem_bytes(dtype_size(x.dtype()), [&](auto tag) {
      using U = typename decltype(tag)::type;
      where(device_data<bool>(c), reinterpret_cast<const U*>(bytes_of(x)), reinterpret_cast<const U*>(bytes_of(y)),
            reinterpret_cast<U*>(bytes_of(out)), out.numel(), index);
    });
    ctx.set_output(0, std::move(out));
  }
};

class ClipOp : public OpKernel {
 public:
  explicit ClipOp(const OpInit& init) : attrs_(init) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    visit_types<TypeSet::Numeric>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor y = running().empty(dtype_of<T>, x.shape());
      map_unary(device_data<T>(x), device_data<T>(y), x.numel(), Stored<T, ClipF<compute_t<T>>>{attrs_.bounds<T>(ctx)});
      ctx.set_output(0, std::move(y));
    });
  }

 private:
  ClipAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "Transpose", TransposeOp, 1, 13, 21, 23, 24, 25);
MPA_REGISTER_KERNEL("cuda", "", "Slice", SliceOp, 1, 10, 11, 13);
MPA_REGISTER_KERNEL("cuda", "", "Expand", ExpandOp, 8, 13);
MPA_REGISTER_KERNEL("cuda", "", "Concat", ConcatOp, 1, 4, 11, 13);
MPA_REGISTER_KERNEL("cuda", "", "Gather", GatherOp, 1, 11, 13);
MPA_REGISTER_KERNEL("cuda", "", "Where", WhereOp, 9, 16);
MPA_REGISTER_KERNEL("cuda", "", "Clip", ClipOp, 1, 6, 11, 12, 13);

}  // namespace mpa::cuda
