// Pad: constant / reflect / edge / wrap (wrap since opset 19). Pads (and the constant value) are
// attributes before opset 11 (`paddings` in opset 1) and inputs since; opset 18 adds the axes input.
// Negative pads crop. Constant mode fills and copies the kept box; the other modes read every output
// element through a per-axis index map.
#include "ops/pad.h"

#include <cstring>

#include "common/parallel.h"
#include "ops/copy_strided.h"
#include "ops/shape_helpers.h"

namespace mpa {

PadAttrs::PadAttrs(const OpInit& init)
    : opset_(init.opset()),
      pads_attr_(init.get_ints(init.opset() < 2 ? "paddings" : "pads")),
      value_attr_(init.get_float("value", 0.f)) {
  const std::string mode = init.get_string("mode", "constant");
  if (mode == "constant")
    mode_ = PadMode::Constant;
  else if (mode == "reflect")
    mode_ = PadMode::Reflect;
  else if (mode == "edge")
    mode_ = PadMode::Edge;
  else if (mode == "wrap" && init.opset() >= 19)
    mode_ = PadMode::Wrap;
  else
    fail(init.node().label() + ": mode '" + mode + "' is not supported at opset " + std::to_string(init.opset()));
}

PadGeometry PadAttrs::geometry(const KernelContext& ctx) const {
  const Node& node = ctx.node();
  const Tensor& in = ctx.input(0);
  const int64_t rank = in.rank();
  std::vector<int64_t> raw = opset_ < 11 ? pads_attr_ : index_values(node, ctx.input(1));
  std::vector<int64_t> axes;
  if (opset_ >= 18 && ctx.has_input(3))
    axes = normalize_axes(node, index_values(node, ctx.input(3)), rank);
  else
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  const size_t n = axes.size();
  if (raw.size() != 2 * n)
    fail(node.label() + ": pads has " + std::to_string(raw.size()) + " values, expected " + std::to_string(2 * n) +
         " (begin and end for each of " + std::to_string(n) + " axes)");
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < n; ++i) {
    begin[static_cast<size_t>(axes[i])] = raw[i];
    end[static_cast<size_t>(axes[i])] = raw[n + i];
  }
  Shape out_shape(static_cast<size_t>(rank));
  for (size_t d = 0; d < out_shape.size(); ++d) {
    const int64_t size = in.shape()[d];
    constexpr int64_t kMax = int64_t{1} << 62;
    if (begin[d] > kMax || end[d] > kMax || begin[d] < -kMax || end[d] < -kMax || size + begin[d] + end[d] < 0)
      fail(node.label() + ": pads " + shape_str(raw) + " give an invalid size for dim " + std::to_string(d) +
           " of input " + shape_str(in.shape()));
    out_shape[d] = size + begin[d] + end[d];
    if (mode_ != PadMode::Constant && size == 0 && out_shape[d] > 0)
      fail(node.label() + ": cannot pad an empty dim " + std::to_string(d) + " in non-constant mode");
  }
  return {begin, out_shape};
}

std::vector<std::byte> PadAttrs::fill_value(const KernelContext& ctx, const Tensor& in) const {
  std::vector<std::byte> value(dtype_size(in.dtype()));
  const Tensor* v = opset_ >= 11 ? ctx.optional_input(2) : nullptr;
  if (v && v->numel() > 0) {
    if (v->dtype() != in.dtype())
      fail(ctx.node().label() + ": constant_value has type " + dtype_name(v->dtype()) + " but data has " +
           dtype_name(in.dtype()));
    std::memcpy(value.data(), v->raw(), value.size());
  } else {
    visit_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T converted = store<T>(static_cast<compute_t<T>>(value_attr_));
      std::memcpy(value.data(), &converted, sizeof(T));
    });
  }
  return value;
}

PadBox pad_kept_box(const Shape& in, const Shape& out, const std::vector<int64_t>& begin) {
  PadBox kept{Shape(in.size()), 0, 0};
  const std::vector<int64_t> in_strides = contiguous_strides(in), out_strides = contiguous_strides(out);
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t skip = std::max<int64_t>(0, -begin[d]);
    kept.box[d] = std::max<int64_t>(0, std::min(in[d] - skip, out[d] - std::max<int64_t>(0, begin[d])));
    kept.src_offset += skip * in_strides[d];
    kept.dst_offset += std::max<int64_t>(0, begin[d]) * out_strides[d];
  }
  return kept;
}

class PadOp : public OpKernel {
 public:
  explicit PadOp(const OpInit& init) : attrs_(init) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const PadGeometry g = attrs_.geometry(ctx);
    const std::vector<int64_t>& begin = g.begin;
    const Shape& out_shape = g.out_shape;
    Tensor& out = allocate_checked(ctx, 0, in.dtype(), out_shape);
    if (out.numel() == 0) return;
    if (attrs_.mode() == PadMode::Constant)
      pad_constant(ctx, in, out, begin);
    else
      pad_mapped(in, out, begin);
  }

 private:
  void pad_constant(const KernelContext& ctx, const Tensor& in, Tensor& out, const std::vector<int64_t>& begin) const {
    const std::vector<std::byte> value = attrs_.fill_value(ctx, in);
    fill_elements(out.raw(), out.numel(), value.data(), value.size());
    const PadBox kept = pad_kept_box(in.shape(), out.shape(), begin);
    if (shape_numel(kept.box) == 0) return;
    copy_strided(element_ptr(out, kept.dst_offset), contiguous_strides(out.shape()), element_ptr(in, kept.src_offset),
                 contiguous_strides(in.shape()), kept.box, dtype_size(in.dtype()));
  }

  void pad_mapped(const Tensor& in, Tensor& out, const std::vector<int64_t>& begin) const {
    const size_t rank = in.shape().size();
    const std::vector<int64_t> in_strides = contiguous_strides(in.shape());
    std::vector<std::vector<int64_t>> maps(rank);  // per dim: output coordinate -> source offset
    for (size_t d = 0; d < rank; ++d) {
      maps[d].resize(static_cast<size_t>(out.shape()[d]));
      for (int64_t o = 0; o < out.shape()[d]; ++o)
        maps[d][static_cast<size_t>(o)] = pad_source_index(attrs_.mode(), o, begin[d], in.shape()[d]) * in_strides[d];
    }
    if (rank == 0) {
      std::memcpy(out.raw(), in.raw(), dtype_size(in.dtype()));
      return;
    }
    const int64_t row = out.shape().back(), rows = out.numel() / row;
    const std::vector<int64_t>& last = maps.back();
    visit_elem_bytes(dtype_size(in.dtype()), [&](auto tag) {
      constexpr int64_t E = sizeof(typename decltype(tag)::type);
      const auto* src = static_cast<const std::byte*>(in.raw());
      auto* dst = static_cast<std::byte*>(out.raw());
      parallel_for(rows, std::max<int64_t>(1, 16384 / row), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t base = 0;
          for (size_t d = rank - 1, rest = static_cast<size_t>(r); d-- > 0;) {
            const size_t size = static_cast<size_t>(out.shape()[d]);
            base += maps[d][rest % size];
            rest /= size;
          }
          std::byte* o = dst + r * row * E;
          for (int64_t j = 0; j < row; ++j) std::memcpy(o + j * E, src + (base + last[static_cast<size_t>(j)]) * E, E);
        }
      });
    });
  }

  PadAttrs attrs_;
};
MPA_OP_TRAITS("", "Pad", {.precision = PrecisionClass::Exact, .host_inputs = {1, 2, 3}});
MPA_REGISTER_OP("", "Pad", PadOp, 1, 2, 11, 13, 18, 19, 21, 23, 24, 25);

}  // namespace mpa
