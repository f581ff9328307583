// ONNX Attention (23; 24 adds nonpad_kv_seqlen). Q, K, V are 4-D [B, N, S, H] or 3-D [B, S, N * H] (with
// q_num_heads, kv_num_heads); past_key/past_value [B, N_kv, P, H] precede the new keys and values in the
// present outputs, which the attention reads. attn_mask (bool: true attends; float: added) broadcasts to
// [B, N_q, S, T] from the right, a last dim shorter than T counting as masked beyond its end; is_causal
// masks key t for query s when t > P + s; nonpad_kv_seqlen[b] masks keys from that position on. Masked
// positions are -inf, so a fully masked row gives NaN, as the ONNX reference does.
// qk_matmul_output_mode: 0 scaled QK^T, 1 after softcap, 2 after the mask, 3 the probabilities.
#include "ops/attention.h"

#include <cmath>
#include <limits>

#include "ops/compute_buffer.h"

namespace mpa {
namespace {

ScoresStage stage_of_mode(int64_t mode, const std::string& who) {
  switch (mode) {
    case 0: return ScoresStage::Product;
    case 1: return ScoresStage::Softcapped;
    case 2: return ScoresStage::Biased;
    case 3: return ScoresStage::Probabilities;
    default: fail(who + ": qk_matmul_output_mode must be 0..3, got " + std::to_string(mode));
  }
}

struct Geometry {
  AttentionDims dims;
  int64_t past = 0, new_len = 0;
  bool three_d = false;
};

Geometry geometry_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* past_key,
                     const Tensor* past_value, int64_t q_heads, int64_t kv_heads, const std::string& who) {
  Geometry g;
  AttentionDims& d = g.dims;
  if (!((q.rank() == 3 || q.rank() == 4) && k.rank() == q.rank() && v.rank() == q.rank()))
    fail(who + ": Q, K and V must all be 3-D or all 4-D, got " + shape_str(q.shape()) + ", " + shape_str(k.shape()) +
         ", " + shape_str(v.shape()));
  g.three_d = q.rank() == 3;
  d.batch = q.dim(0);
  if (g.three_d) {
    if (!(q_heads > 0 && kv_heads > 0)) fail(who + ": 3-D inputs need q_num_heads and kv_num_heads");
    if (!(q.dim(2) % q_heads == 0 && k.dim(2) % kv_heads == 0 && v.dim(2) % kv_heads == 0))
      fail(who + ": hidden sizes " + shape_str(q.shape()) + ", " + shape_str(k.shape()) + ", " + shape_str(v.shape()) +
           " do not split into the heads");
    d.q_heads = q_heads;
    d.kv_heads = kv_heads;
    d.q_len = q.dim(1);
    g.new_len = k.dim(1);
    d.head_size = q.dim(2) / q_heads;
    d.v_head_size = v.dim(2) / kv_heads;
    if (!(k.dim(2) / kv_heads == d.head_size && v.dim(1) == g.new_len))
      fail(who + ": K " + shape_str(k.shape()) + " or V " + shape_str(v.shape()) + " does not match Q " +
           shape_str(q.shape()));
  } else {
    d.q_heads = q.dim(1);
    d.kv_heads = k.dim(1);
    d.q_len = q.dim(2);
    g.new_len = k.dim(2);
    d.head_size = q.dim(3);
    d.v_head_size = v.dim(3);
    if (!(k.dim(3) == d.head_size && v.dim(1) == d.kv_heads && v.dim(2) == g.new_len))
      fail(who + ": K " + shape_str(k.shape()) + " or V " + shape_str(v.shape()) + " does not match Q " +
           shape_str(q.shape()));
  }
  if (!(k.dim(0) == d.batch && v.dim(0) == d.batch && d.kv_heads > 0 && d.q_heads % d.kv_heads == 0))
    fail(who + ": batch or head counts of Q " + shape_str(q.shape()) + ", K " + shape_str(k.shape()) + ", V " +
         shape_str(v.shape()) + " do not match (q heads must be a multiple of kv heads)");
  if ((past_key == nullptr) != (past_value == nullptr)) fail(who + ": past_key and past_value go together");
  if (past_key) {
    g.past = past_key->rank() == 4 ? past_key->dim(2) : -1;
    if (!(past_key->shape() == Shape{d.batch, d.kv_heads, g.past, d.head_size} &&
          past_value->shape() == Shape{d.batch, d.kv_heads, g.past, d.v_head_size}))
      fail(who + ": past_key " + shape_str(past_key->shape()) + " / past_value " + shape_str(past_value->shape()) +
           " do not match [B, kv_heads, P, head_size]");
  }
  d.kv_len = g.past + g.new_len;
  return g;
}

// The additive bias of attn_mask, is_causal and nonpad_kv_seqlen (none: no bias).
template <class A>
ScoreBias<A> mask_bias(const Tensor* mask, bool causal, const Tensor* nonpad, const Geometry& g,
                       const std::string& who) {
  const AttentionDims& d = g.dims;
  if (!mask && !causal && !nonpad) return {};
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const int64_t r = mask ? mask->rank() : 0;
  auto dim = [&](int64_t from_end, int64_t fallback) {
    return r >= from_end ? mask->dim(int(r - from_end)) : fallback;
  };
  const int64_t mb = dim(4, 1), mh = dim(3, 1), ms = dim(2, 1), mt = dim(1, d.kv_len);
  if (mask && !(r >= 1 && r <= 4 && (mb == 1 || mb == d.batch) && (mh == 1 || mh == d.q_heads) &&
                (ms == 1 || ms == d.q_len) && mt <= d.kv_len))
    fail(who + ": attn_mask " + shape_str(mask->shape()) + " does not broadcast to [" + std::to_string(d.batch) + ", " +
         std::to_string(d.q_heads) + ", " + std::to_string(d.q_len) + ", " + std::to_string(d.kv_len) + "]");
  ScoreBias<A> bias(mb > 1 || nonpad ? d.batch : 1, mh, d.q_len, d.kv_len);
  if (mask) {
    const bool boolean = mask->dtype() == DType::Bool;
    const std::vector<double> values = mask->to_double_vector();
    for (int64_t b = 0; b < bias.batches; ++b)
      for (int64_t h = 0; h < mh; ++h)
        for (int64_t s = 0; s < d.q_len; ++s) {
          A* row = bias.row(b, h, s);
          const double* m = values.data() + (((mb == 1 ? 0 : b) * mh + h) * ms + (ms == 1 ? 0 : s)) * mt;
          for (int64_t t = 0; t < d.kv_len; ++t)
            row[t] = t >= mt ? neg_inf : boolean ? (m[t] != 0 ? A(0) : neg_inf) : static_cast<A>(m[t]);
        }
  }
  if (causal) bias.mask_future(g.past, neg_inf);
  if (nonpad) {
    const std::vector<int64_t> lengths = nonpad->to_int64_vector();
    if (!(static_cast<int64_t>(lengths.size()) == d.batch))
      fail(who + ": nonpad_kv_seqlen must hold one length per batch, got " + shape_str(nonpad->shape()));
    for (int64_t b = 0; b < d.batch; ++b)
      bias.mask_keys(b, std::clamp<int64_t>(lengths[static_cast<size_t>(b)], 0, d.kv_len), d.kv_len, neg_inf);
  }
  return bias;
}

class AttentionOp : public OpKernel {
 public:
  explicit AttentionOp(const OpInit& init)
      : causal_(init.get_int("is_causal", 0) != 0),
        q_heads_(init.get_int("q_num_heads", 0)),
        kv_heads_(init.get_int("kv_num_heads", 0)),
        stage_(stage_of_mode(init.get_int("qk_matmul_output_mode", 0), init.node().label())),
        scale_(init.get_float("scale", 0.f)),
        softcap_(init.get_float("softcap", 0.f)) {}

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
    const Tensor *mask = ctx.optional_input(3), *past_key = ctx.optional_input(4), *past_value = ctx.optional_input(5);
    const Tensor* nonpad = ctx.optional_input(6);
    if (!(k.dtype() == q.dtype() && v.dtype() == q.dtype() && (!past_key || past_key->dtype() == q.dtype()) &&
          (!past_value || past_value->dtype() == q.dtype())))
      fail(who + ": Q, K, V and the past caches must share one element type");
    const Geometry g = geometry_of(q, k, v, past_key, past_value, q_heads_, kv_heads_, who);
    const AttentionDims& d = g.dims;
    auto wants = [&](size_t i) { return i < ctx.num_outputs() && ctx.output_requested(i); };
    visit_float(q.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      using A = acc_t<E>;
      const E *qe = q.data<E>(), *ke = k.data<E>(), *ve = v.data<E>();
      auto heads_of = [&](const E* data, int64_t heads, int64_t len, int64_t size) {
        return g.three_d ? bsnh_heads(data, len, size, heads * size) : bnsh_heads(data, heads, len, size);
      };
      const HeadView<const E> k_new = heads_of(ke, d.kv_heads, g.new_len, d.head_size);
      const HeadView<const E> v_new = heads_of(ve, d.kv_heads, g.new_len, d.v_head_size);
      // With a past, or when the present caches are asked for, the attention reads the caches.
      const bool caches = past_key || wants(1) || wants(2);
      Tensor present_key, present_value;
      if (caches) {
        present_key = Tensor(q.dtype(), {d.batch, d.kv_heads, d.kv_len, d.head_size});
        present_value = Tensor(q.dtype(), {d.batch, d.kv_heads, d.kv_len, d.v_head_size});
        write_cache(present_key.data<E>(), past_key ? past_key->data<E>() : nullptr, g.past, k_new, d.batch, d.kv_heads,
                    g.new_len, d.head_size);
        write_cache(present_value.data<E>(), past_value ? past_value->data<E>() : nullptr, g.past, v_new, d.batch,
                    d.kv_heads, g.new_len, d.v_head_size);
      }
      std::vector<A> qh, kh, vh;
      const HeadView<const E> qv = heads_of(qe, d.q_heads, d.q_len, d.head_size);
      const HeadView<const E> kv =
          caches ? bnsh_heads<const E>(present_key.data<E>(), d.kv_heads, d.kv_len, d.head_size) : k_new;
      const HeadView<const E> vv =
          caches ? bnsh_heads<const E>(present_value.data<E>(), d.kv_heads, d.kv_len, d.v_head_size) : v_new;
      const A* qa = as_acc<E>(q, qh);
      const A* ka = as_acc<E>(caches ? present_key : k, kh);
      const A* va = as_acc<E>(caches ? present_value : v, vh);
      auto widened = [](HeadView<const E> h, const A* data) { return HeadView<const A>{data, h.batch, h.head, h.row}; };
      Tensor& y = ctx.allocate_output(0, q.dtype(),
                                      g.three_d ? Shape{d.batch, d.q_len, d.q_heads * d.v_head_size}
                                                : Shape{d.batch, d.q_heads, d.q_len, d.v_head_size});
      AccOutput<E> y_acc(y);
      const HeadView<A> yv = g.three_d ? bsnh_heads(y_acc.data(), d.q_len, d.v_head_size, d.q_heads * d.v_head_size)
                                       : bnsh_heads(y_acc.data(), d.q_heads, d.q_len, d.v_head_size);
      std::vector<A> scores;
      if (wants(3)) scores.resize(static_cast<size_t>(d.batch * d.q_heads * d.q_len * d.kv_len));
      const double scale = scale_ != 0.f ? scale_ : 1.0 / std::sqrt(static_cast<double>(d.head_size));
      scaled_dot_product_attention<A>(d, widened(qv, qa), widened(kv, ka), widened(vv, va),
                                      mask_bias<A>(mask, causal_, nonpad, g, who),
                                      attention_math(ctx.config(), q.dtype(), scale, softcap_), yv,
                                      wants(3) ? scores.data() : nullptr, wants(3) ? stage_ : ScoresStage::None);
      y_acc.finish();
      if (wants(1)) ctx.set_output(1, present_key);
      if (wants(2)) ctx.set_output(2, present_value);
      if (wants(3)) {
        Tensor& out = ctx.allocate_output(3, q.dtype(), {d.batch, d.q_heads, d.q_len, d.kv_len});
        narrow(scores.data(), out.data<E>(), out.numel());
      }
    });
  }

 private:
  bool causal_;
  int64_t q_heads_, kv_heads_;
  ScoresStage stage_;
  float scale_, softcap_;
};

}  // namespace

// QK^T and PV are GEMMs (--accumulate); the softmax between them always sums in float (module comment of
// ops/attention.h).
MPA_OP_TRAITS("", "Attention",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting, .host_inputs = {6}});
MPA_REGISTER_OP("", "Attention", AttentionOp, 23, 24);

}  // namespace mpa
