// RotaryEmbedding: ONNX (23) and com.microsoft (1), one kernel. The input is 4-D [B, N, S, H] or 3-D
// [B, S, N * H]; the first rotary_embedding_dim (default H) values of every head are rotated by the cos/sin
// cache row of the token's position (rotate_head in ops/attention.h), the rest pass through.
//   ONNX:           (input, cos_cache, sin_cache, position_ids?): caches [max_pos, rot/2] indexed by
//                   position_ids [B, S], or without position_ids [B, S, rot/2] per token; 3-D needs num_heads.
//   com.microsoft:  (input, position_ids, cos_cache, sin_cache): position_ids [B, S], or [1] holding the
//                   first position of every sequence; 3-D without num_heads takes H = 2 * cache width.
#include "common/parallel.h"
#include "ops/attention.h"
#include "ops/op.h"

namespace mpa {
namespace {

struct RotaryInputs {
  const Tensor *x, *cos, *sin, *positions;
};

class RotaryEmbeddingOp : public OpKernel {
 public:
  explicit RotaryEmbeddingOp(const OpInit& init)
      : contrib_(init.node().domain == "com.microsoft"),
        interleaved_(init.get_int("interleaved", 0) != 0),
        heads_(init.get_int("num_heads", 0)),
        rotary_dim_(init.get_int("rotary_embedding_dim", 0)) {
    if (contrib_ && init.get_int("is_packed_batching", 0) != 0)
      fail(init.node().label() + ": is_packed_batching (ragged batches) is not supported");
  }

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const RotaryInputs in = contrib_ ? RotaryInputs{&ctx.input(0), &ctx.input(2), &ctx.input(3), ctx.optional_input(1)}
                                     : RotaryInputs{&ctx.input(0), &ctx.input(1), &ctx.input(2), ctx.optional_input(3)};
    const Tensor &x = *in.x, &cos = *in.cos, &sin = *in.sin;
    if (!(x.rank() == 3 || x.rank() == 4)) fail(who + ": input must be 3-D or 4-D, got " + shape_str(x.shape()));
    if (!(cos.dtype() == x.dtype() && sin.dtype() == x.dtype() && cos.shape() == sin.shape() && cos.rank() >= 2))
      fail(who + ": cos_cache " + shape_str(cos.shape()) + " and sin_cache " + shape_str(sin.shape()) +
           " must match each other and the input's element type");
    const bool four_d = x.rank() == 4;
    const int64_t B = x.dim(0), S = four_d ? x.dim(2) : x.dim(1), half_width = cos.dim(cos.rank() - 1);
    int64_t heads = four_d ? x.dim(1) : heads_;
    if (!four_d && heads == 0) {
      if (!(contrib_ && rotary_dim_ == 0)) fail(who + ": a 3-D input needs num_heads");
      heads = half_width > 0 ? x.dim(2) / (2 * half_width) : 0;
    }
    const int64_t H = four_d ? x.dim(3) : (heads > 0 ? x.dim(2) / heads : 0);
    const int64_t rot = rotary_dim_ > 0 ? rotary_dim_ : H;
    if (!(heads > 0 && (four_d || heads * H == x.dim(2)) && rot % 2 == 0 && rot <= H && half_width == rot / 2))
      fail(who + ": input " + shape_str(x.shape()) + " with " + std::to_string(heads) + " heads, rotary dim " +
           std::to_string(rot) + " and caches " + shape_str(cos.shape()) + " do not fit");
    // The cache row of every token (b, s).
    std::vector<int64_t> rows(static_cast<size_t>(B * S));
    if (in.positions) {
      const std::vector<int64_t> p = in.positions->to_int64_vector();
      const bool first_only = contrib_ && p.size() == 1;
      if (!(first_only || static_cast<int64_t>(p.size()) == B * S))
        fail(who + ": position_ids " + shape_str(in.positions->shape()) + " must be [B, S]");
      for (int64_t i = 0; i < B * S; ++i)
        rows[static_cast<size_t>(i)] = first_only ? p[0] + i % S : p[static_cast<size_t>(i)];
      if (!(cos.rank() == 2))
        fail(who + ": with position_ids the caches must be [max_position, rotary_dim / 2], got " +
             shape_str(cos.shape()));
      for (int64_t r : rows)
        if (!(r >= 0 && r < cos.dim(0)))
          fail(who + ": position " + std::to_string(r) + " outside the caches' " + std::to_string(cos.dim(0)) +
               " rows");
    } else {
      if (!(cos.shape() == Shape{B, S, half_width}))
        fail(who + ": without position_ids the caches must be [B, S, rotary_dim / 2], got " + shape_str(cos.shape()));
      for (int64_t i = 0; i < B * S; ++i) rows[static_cast<size_t>(i)] = i;
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      const E *xd = x.data<E>(), *cd = cos.data<E>(), *sd = sin.data<E>();
      E* yd = y.data<E>();
      parallel_for(B * S * heads, std::max<int64_t>(1, 8192 / std::max<int64_t>(H, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       const int64_t token = i / heads, h = i % heads, b = token / S, s = token % S;
                       const int64_t offset = four_d ? ((b * heads + h) * S + s) * H : (token * heads + h) * H;
                       const int64_t row = rows[static_cast<size_t>(token)] * half_width;
                       rotate_head(xd + offset, yd + offset, cd + row, sd + row, rot, H, interleaved_);
                     }
                   });
    });
  }

 private:
  bool contrib_, interleaved_;
  int64_t heads_, rotary_dim_;
};

}  // namespace

MPA_OP_TRAITS("", "RotaryEmbedding", {.host_inputs = {3}});
MPA_REGISTER_OP("", "RotaryEmbedding", RotaryEmbeddingOp, 23);
MPA_OP_TRAITS("com.microsoft", "RotaryEmbedding", {.host_inputs = {1}});
MPA_REGISTER_OP("com.microsoft", "RotaryEmbedding", RotaryEmbeddingOp, 1);

}  // namespace mpa
