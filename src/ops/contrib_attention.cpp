// com.microsoft Attention, MultiHeadAttention and GroupQueryAttention (onnxruntime's ContribOperators.md,
// CPU kernels under contrib_ops/cpu/bert), on the shared core of ops/attention.h.
//
// Masks follow onnxruntime's CPU kernels: a masked key gets mask_filter_value (default -10000) added, not
// -inf, so a fully masked row attends uniformly instead of giving NaN; `unidirectional` sets future keys to
// float lowest; GroupQueryAttention's keys outside the causal (and local) window get probability 0.
//
//   Attention            input [B, S, D_in] x weights [D_in, D_q + D_k + D_v] (+ bias) gives packed Q, K, V;
//                        mask_index: [B] key lengths, [2B] ends then starts, [B, T] or [B, S, T] 0/1;
//                        past [2, B, N, P, H] precedes the new keys/values in present; attention_bias
//                        [B or 1, N or 1, S, T] is added.
//   MultiHeadAttention   query [B, S, D] with key/value [B, L, D] (bias added), key/value [B, N, L, H]
//                        (no bias, no past), packed query [B, S, N, 3, H] or packed key [B, L, N, 2, H];
//                        key_padding_mask [B], [B, T] or [B, S, T]; past_key/past_value [B, N, P, H].
//   GroupQueryAttention  query [B, S, N * H] (or Q, K, V packed along the last dim); always causal; batch b
//                        holds seqlens_k[b] + 1 tokens, the last S of them new (all of them in the first
//                        prompt, S == total_sequence_length); past/present caches [B, N_kv, P, H];
//                        do_rotary rotates Q and K at the tokens' positions; local_window_size; softcap.
#include <cmath>
#include <limits>

#include "ops/attention.h"
#include "ops/compute_buffer.h"

namespace mpa {
namespace {

const std::string kMs = "com.microsoft";

double default_scale(float scale, int64_t head_size) {
  return scale != 0.f ? scale : 1.0 / std::sqrt(static_cast<double>(head_size));
}

// The bias of a com.microsoft mask (mask_index, key_padding_mask), unidirectional and attention_bias, over
// [B, N, S, T] scores whose first `past` keys come from the cache.
template <class A>
ScoreBias<A> contrib_bias(const Tensor* mask, bool unidirectional, const Tensor* attention_bias, int64_t batch,
                          int64_t heads, int64_t q_len, int64_t kv_len, int64_t past, float filter,
                          const std::string& who) {
  if (!mask && !unidirectional && !attention_bias) return {};
  int64_t bias_batches = 1, bias_heads = 1;
  if (attention_bias) {
    const Shape& s = attention_bias->shape();
    if (!(s.size() == 4 && (s[0] == 1 || s[0] == batch) && (s[1] == 1 || s[1] == heads) && s[2] == q_len &&
          s[3] == kv_len))
      fail(who + ": attention_bias " + shape_str(s) + " must be [B or 1, N or 1, S, T] = [" + std::to_string(batch) +
           ", " + std::to_string(heads) + ", " + std::to_string(q_len) + ", " + std::to_string(kv_len) + "]");
    bias_batches = s[0];
    bias_heads = s[1];
  }
  ScoreBias<A> bias(mask ? batch : bias_batches, bias_heads, q_len, kv_len);
  if (mask) {
    const Shape& s = mask->shape();
    const std::vector<int64_t> m = mask->to_int64_vector();
    const A masked = static_cast<A>(filter);
    if (s.size() == 1 && (s[0] == batch || s[0] == 2 * batch)) {
      for (int64_t b = 0; b < batch; ++b) {
        bias.mask_keys(b, std::clamp<int64_t>(m[static_cast<size_t>(b)], 0, kv_len), kv_len, masked);
        if (s[0] == 2 * batch)
          bias.mask_keys(b, 0, std::clamp<int64_t>(m[static_cast<size_t>(batch + b)], 0, kv_len), masked);
      }
    } else if ((s.size() == 2 && s[0] == batch && s[1] == kv_len) ||
               (s.size() == 3 && s[0] == batch && s[1] == q_len && s[2] == kv_len)) {
      const int64_t row_step = s.size() == 3 ? kv_len : 0;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < bias.heads; ++h)
          for (int64_t q = 0; q < q_len; ++q) {
            A* row = bias.row(b, h, q);
            const size_t base = static_cast<size_t>(b * (s.size() == 3 ? q_len * kv_len : kv_len) + q * row_step);
            for (int64_t t = 0; t < kv_len; ++t)
              if (m[base + static_cast<size_t>(t)] == 0) row[t] = masked;
          }
    } else {
      fail(who + ": mask " + shape_str(s) +
           " is not supported (supported: [B] lengths, [2B] ends and starts, [B, T], " + "[B, S, T] with B = " +
           std::to_string(batch) + ", S = " + std::to_string(q_len) + ", T = " + std::to_string(kv_len) + ")");
    }
  }
  if (unidirectional) bias.mask_future(past, std::numeric_limits<A>::lowest());
  if (attention_bias) {
    const std::vector<double> add = attention_bias->to_double_vector();
    for (int64_t b = 0; b < bias.batches; ++b)
      for (int64_t h = 0; h < bias.heads; ++h)
        for (int64_t q = 0; q < q_len; ++q) {
          A* row = bias.row(b, h, q);
          const double* from = add.data() + (((bias_batches == 1 ? 0 : b) * bias_heads + h) * q_len + q) * kv_len;
          for (int64_t t = 0; t < kv_len; ++t) row[t] += static_cast<A>(from[t]);
        }
  }
  return bias;
}

template <class A>
HeadView<const A> as_const(HeadView<A> h) {
  return {h.data, h.batch, h.head, h.row};
}

// Adds `bias` (one value per channel of rows `channels` wide) to n values and rounds the sums where an
// unfused runtime stores them (AttentionMath::intermediates).
template <class E, class A>
void add_channel_bias(A* values, int64_t n, const E* bias, int64_t channels, const AttentionMath& math) {
  for (int64_t i = 0; i < n; ++i) values[i] += static_cast<A>(load(bias[i % channels]));
  store_intermediates(math.intermediates, values, n);
}

// x (storage E) widened to A, plus `bias` from element `offset` on, if any.
template <class E, class A>
std::vector<A> biased(const Tensor& x, const Tensor* bias, int64_t offset, const AttentionMath& math) {
  std::vector<A> out(static_cast<size_t>(x.numel()));
  widen(x.data<E>(), out.data(), x.numel());
  if (bias) add_channel_bias(out.data(), x.numel(), bias->data<E>() + offset, x.dim(x.rank() - 1), math);
  return out;
}

// Concatenates past (A values, [B, N, P, D]) and the new heads into the present cache, writes it to output
// `index` when asked for, and returns the cache's heads.
template <class E, class A>
HeadView<const A> cache_heads(KernelContext& ctx, size_t index, std::vector<A>& cache, const A* past, int64_t past_len,
                              HeadView<const A> fresh, int64_t batch, int64_t heads, int64_t len, int64_t dim,
                              DType dtype) {
  cache.resize(static_cast<size_t>(batch * heads * (past_len + len) * dim));
  write_cache(cache.data(), past, past_len, fresh, batch, heads, len, dim);
  if (index < ctx.num_outputs() && ctx.output_requested(index)) {
    Tensor& out = ctx.allocate_output(index, dtype, {batch, heads, past_len + len, dim});
    narrow(cache.data(), out.data<E>(), out.numel());
  }
  return bnsh_heads<const A>(cache.data(), heads, past_len + len, dim);
}

// [SECTION] Attention

class MsAttentionOp : public OpKernel {
 public:
  explicit MsAttentionOp(const OpInit& init)
      : heads_(init.require_int("num_heads")),
        sizes_(init.get_ints("qkv_hidden_sizes")),
        unidirectional_(init.get_int("unidirectional", 0) != 0),
        filter_(init.get_float("mask_filter_value", -10000.f)),
        scale_(init.get_float("scale", 0.f)) {
    const std::string who = init.node().label();
    if (init.get_int("do_rotary", 0) != 0) fail(who + ": do_rotary is not supported");
    if (init.get_int("past_present_share_buffer", 0) != 0) fail(who + ": past_present_share_buffer is not supported");
    if (!(heads_ > 0 && (sizes_.empty() || sizes_.size() == 3)))
      fail(who + ": num_heads must be positive and qkv_hidden_sizes hold three sizes");
  }

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    const Tensor *bias = ctx.optional_input(2), *mask = ctx.optional_input(3), *past = ctx.optional_input(4);
    const Tensor* attention_bias = ctx.optional_input(5);
    if (!(x.rank() == 3 && w.rank() == 2 && w.dim(0) == x.dim(2) && w.dtype() == x.dtype()))
      fail(who + ": input " + shape_str(x.shape()) + " and weights " + shape_str(w.shape()) + " do not fit");
    const int64_t width = w.dim(1);
    const int64_t dq = sizes_.empty() ? width / 3 : sizes_[0], dk = sizes_.empty() ? width / 3 : sizes_[1],
                  dv = sizes_.empty() ? width / 3 : sizes_[2];
    if (!(dq + dk + dv == width && dq == dk && dq % heads_ == 0 && dv % heads_ == 0))
      fail(who + ": weights " + shape_str(w.shape()) + " do not split into Q, K, V of num_heads heads");
    if (bias && !(bias->shape() == Shape{width} && bias->dtype() == x.dtype()))
      fail(who + ": bias must be [" + std::to_string(width) + "]");
    AttentionDims d;
    d.batch = x.dim(0);
    d.q_heads = d.kv_heads = heads_;
    d.q_len = x.dim(1);
    d.head_size = dq / heads_;
    d.v_head_size = dv / heads_;
    const int64_t past_len = past ? past->dim(3) : 0;
    if (past && !(past->shape() == Shape{2, d.batch, heads_, past_len, d.head_size} && d.v_head_size == d.head_size))
      fail(who + ": past " + shape_str(past->shape()) + " must be [2, B, N, P, H] (with equal Q, K, V head sizes)");
    d.kv_len = past_len + d.q_len;
    visit_float(x.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      using A = acc_t<E>;
      const AttentionMath math = attention_math(ctx.config(), x.dtype(), default_scale(scale_, d.head_size), 0);
      std::vector<A> xh, wh;
      const A* xa = as_acc<E>(x, xh);
      const A* wa = as_acc<E>(w, wh);
      // The projection: one GEMM, stored, then the bias added (the CUDA kernel's GEMM and AddBiasTranspose).
      const int64_t tokens = d.batch * d.q_len;
      std::vector<A> qkv(static_cast<size_t>(tokens * width));
      cpu::gemm(false, false, tokens, width, x.dim(2), A(1), xa, x.dim(2), wa, width, A(0), qkv.data(), width,
                math.gemm);
      store_intermediates(math.intermediates, qkv.data(), tokens * width);
      if (bias) add_channel_bias(qkv.data(), tokens * width, bias->data<E>(), width, math);
      const HeadView<const A> q = bsnh_heads<const A>(qkv.data(), d.q_len, d.head_size, width);
      HeadView<const A> k = bsnh_heads<const A>(qkv.data() + dq, d.q_len, d.head_size, width);
      HeadView<const A> v = bsnh_heads<const A>(qkv.data() + dq + dk, d.q_len, d.v_head_size, width);
      std::vector<A> past_h, present;
      const bool wants_present = ctx.num_outputs() > 1 && ctx.output_requested(1);
      if (past || wants_present) {
        const A* pa = past ? as_acc<E>(*past, past_h) : nullptr;
        const int64_t half = d.batch * heads_ * past_len * d.head_size;
        const int64_t cache_half = d.batch * heads_ * d.kv_len * d.head_size;
        present.resize(static_cast<size_t>(2 * cache_half));
        write_cache(present.data(), pa, past_len, k, d.batch, heads_, d.q_len, d.head_size);
        write_cache(present.data() + cache_half, pa ? pa + half : nullptr, past_len, v, d.batch, heads_, d.q_len,
                    d.head_size);
        k = bnsh_heads<const A>(present.data(), heads_, d.kv_len, d.head_size);
        v = bnsh_heads<const A>(present.data() + cache_half, heads_, d.kv_len, d.v_head_size);
        if (wants_present) {
          Tensor& out = ctx.allocate_output(1, x.dtype(), {2, d.batch, heads_, d.kv_len, d.head_size});
          narrow(present.data(), out.data<E>(), out.numel());
        }
      }
      Tensor& y = ctx.allocate_output(0, x.dtype(), {d.batch, d.q_len, dv});
      AccOutput<E> ya(y);
      scaled_dot_product_attention<A>(d, q, k, v,
                                      contrib_bias<A>(mask, unidirectional_, attention_bias, d.batch, heads_, d.q_len,
                                                      d.kv_len, past_len, filter_, who),
                                      math, bsnh_heads(ya.data(), d.q_len, d.v_head_size, dv));
      ya.finish();
    });
  }

 private:
  int64_t heads_;
  std::vector<int64_t> sizes_;
  bool unidirectional_;
  float filter_, scale_;
};

// [SECTION] MultiHeadAttention

class MultiHeadAttentionOp : public OpKernel {
 public:
  explicit MultiHeadAttentionOp(const OpInit& init)
      : heads_(init.require_int("num_heads")),
        unidirectional_(init.get_int("unidirectional", 0) != 0),
        filter_(init.get_float("mask_filter_value", -10000.f)),
        scale_(init.get_float("scale", 0.f)) {
    if (!(heads_ > 0)) fail(init.node().label() + ": num_heads must be positive");
  }

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& query = ctx.input(0);
    const Tensor *key = ctx.optional_input(1), *value = ctx.optional_input(2), *bias = ctx.optional_input(3);
    const Tensor *mask = ctx.optional_input(4), *attention_bias = ctx.optional_input(5);
    const Tensor *past_key = ctx.optional_input(6), *past_value = ctx.optional_input(7);
    if (ctx.has_input(8) || ctx.has_input(9))
      fail(who + ": past_sequence_length and cache_indirection (shared KV buffers, beam search) are not supported");
    // Which stage onnxruntime's CPU kernel copies into qk is not documented beyond "normalized Q * K".
    if (ctx.num_outputs() > 3 && ctx.output_requested(3)) fail(who + ": output qk is not supported");
    const int64_t N = heads_;
    AttentionDims d;
    d.batch = query.dim(0);
    d.q_heads = d.kv_heads = N;
    d.q_len = query.dim(1);
    // Where Q, K and V lie in their tensors: a tensor, an element offset and the heads' strides.
    enum class Form { Separate, PackedQkv, PackedKv, Bnsh } form;
    int64_t new_len = 0;
    if (query.rank() == 5) {
      form = Form::PackedQkv;
      d.head_size = d.v_head_size = query.dim(4);
      new_len = d.q_len;
      if (!(query.dim(2) == N && query.dim(3) == 3 && !key && !value))
        fail(who + ": packed query " + shape_str(query.shape()) + " must be [B, S, N, 3, H] without key and value");
    } else if (query.rank() == 3 && key && key->rank() == 5) {
      form = Form::PackedKv;
      d.head_size = d.v_head_size = key->dim(4);
      new_len = key->dim(1);
      if (!(key->dim(2) == N && key->dim(3) == 2 && !value && query.dim(2) == N * d.head_size))
        fail(who + ": packed key " + shape_str(key->shape()) + " must be [B, L, N, 2, H] without value");
    } else if (query.rank() == 3 && key && value && key->rank() == 3 && value->rank() == 3) {
      form = Form::Separate;
      d.head_size = query.dim(2) / N;
      d.v_head_size = value->dim(2) / N;
      new_len = key->dim(1);
      if (!(query.dim(2) % N == 0 && key->dim(2) == query.dim(2) && value->dim(2) % N == 0 && value->dim(1) == new_len))
        fail(who + ": query " + shape_str(query.shape()) + ", key " + shape_str(key->shape()) + ", value " +
             shape_str(value->shape()) + " do not fit num_heads " + std::to_string(N));
    } else if (query.rank() == 3 && key && value && key->rank() == 4 && value->rank() == 4) {
      form = Form::Bnsh;
      d.head_size = query.dim(2) / N;
      d.v_head_size = value->dim(3);
      new_len = key->dim(2);
      if (!(key->dim(1) == N && key->dim(3) == d.head_size && value->dim(1) == N && value->dim(2) == new_len))
        fail(who + ": key " + shape_str(key->shape()) + " and value " + shape_str(value->shape()) +
             " must be [B, N, L, H]");
    } else {
      fail(who + ": unsupported query/key/value form " + shape_str(query.shape()) +
           (key ? ", " + shape_str(key->shape()) : "") + (value ? ", " + shape_str(value->shape()) : ""));
    }
    if (bias && form != Form::Separate) fail(who + ": bias is supported with separate 3-D query, key and value only");
    if ((past_key == nullptr) != (past_value == nullptr)) fail(who + ": past_key and past_value go together");
    const int64_t past_len = past_key ? past_key->dim(2) : 0;
    if (past_key && !(form != Form::Bnsh && past_key->shape() == Shape{d.batch, N, past_len, d.head_size} &&
                      past_value->shape() == Shape{d.batch, N, past_len, d.v_head_size}))
      fail(who + ": past_key/past_value " + shape_str(past_key->shape()) +
           " must be [B, N, P, H] (not with [B, N, L, H] keys)");
    d.kv_len = past_len + new_len;
    visit_float(query.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      using A = acc_t<E>;
      const AttentionMath math = attention_math(ctx.config(), query.dtype(), default_scale(scale_, d.head_size), 0);
      const int64_t D = N * d.head_size;
      std::vector<A> qa = biased<E, A>(query, bias, 0, math), ka, va;
      if (key) ka = biased<E, A>(*key, bias, D, math);
      if (value) va = biased<E, A>(*value, bias, 2 * D, math);
      HeadView<const A> q, k, v;
      switch (form) {
        case Form::PackedQkv:
          q = {qa.data(), d.q_len * N * 3 * d.head_size, 3 * d.head_size, N * 3 * d.head_size};
          k = {qa.data() + d.head_size, q.batch, q.head, q.row};
          v = {qa.data() + 2 * d.head_size, q.batch, q.head, q.row};
          break;
        case Form::PackedKv:
          q = bsnh_heads<const A>(qa.data(), d.q_len, d.head_size, D);
          k = {ka.data(), new_len * N * 2 * d.head_size, 2 * d.head_size, N * 2 * d.head_size};
          v = {ka.data() + d.head_size, k.batch, k.head, k.row};
          break;
        case Form::Separate:
          q = bsnh_heads<const A>(qa.data(), d.q_len, d.head_size, D);
          k = bsnh_heads<const A>(ka.data(), new_len, d.head_size, D);
          v = bsnh_heads<const A>(va.data(), new_len, d.v_head_size, N * d.v_head_size);
          break;
        case Form::Bnsh:
          q = bsnh_heads<const A>(qa.data(), d.q_len, d.head_size, D);
          k = bnsh_heads<const A>(ka.data(), N, new_len, d.head_size);
          v = bnsh_heads<const A>(va.data(), N, new_len, d.v_head_size);
          break;
      }
      std::vector<A> past_k, past_v, k_cache, v_cache;
      if (past_key || (ctx.num_outputs() > 1 && ctx.output_requested(1)) ||
          (ctx.num_outputs() > 2 && ctx.output_requested(2))) {
        const A* pk = past_key ? as_acc<E>(*past_key, past_k) : nullptr;
        const A* pv = past_value ? as_acc<E>(*past_value, past_v) : nullptr;
        k = cache_heads<E>(ctx, 1, k_cache, pk, past_len, k, d.batch, N, new_len, d.head_size, query.dtype());
        v = cache_heads<E>(ctx, 2, v_cache, pv, past_len, v, d.batch, N, new_len, d.v_head_size, query.dtype());
      }
      Tensor& y = ctx.allocate_output(0, query.dtype(), {d.batch, d.q_len, N * d.v_head_size});
      AccOutput<E> ya(y);
      scaled_dot_product_attention<A>(
          d, q, k, v,
          contrib_bias<A>(mask, unidirectional_, attention_bias, d.batch, N, d.q_len, d.kv_len, past_len, filter_, who),
          math, bsnh_heads(ya.data(), d.q_len, d.v_head_size, N * d.v_head_size));
      ya.finish();
    });
  }

 private:
  int64_t heads_;
  bool unidirectional_;
  float filter_, scale_;
};

// [SECTION] GroupQueryAttention

class GroupQueryAttentionOp : public OpKernel {
 public:
  explicit GroupQueryAttentionOp(const OpInit& init)
      : heads_(init.require_int("num_heads")),
        kv_heads_(init.require_int("kv_num_heads")),
        window_(init.get_int("local_window_size", -1)),
        rotary_(init.get_int("do_rotary", 0) != 0),
        interleaved_(init.get_int("rotary_interleaved", 0) != 0),
        scale_(init.get_float("scale", 0.f)),
        softcap_(init.get_float("softcap", 0.f)) {
    const std::string who = init.node().label();
    if (init.get_int("smooth_softmax", 0) != 0) fail(who + ": smooth_softmax is not supported");
    if (!(heads_ > 0 && kv_heads_ > 0 && heads_ % kv_heads_ == 0))
      fail(who + ": num_heads must be a positive multiple of kv_num_heads");
  }

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& query = ctx.input(0);
    const Tensor *key = ctx.optional_input(1), *value = ctx.optional_input(2);
    const Tensor *past_key = ctx.optional_input(3), *past_value = ctx.optional_input(4);
    const Tensor &seqlens = ctx.input(5), &total_t = ctx.input(6);
    const Tensor *cos = ctx.optional_input(7), *sin = ctx.optional_input(8);
    for (size_t i = 9; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i)) fail(who + ": position_ids, attention_bias and head_sink are not supported");
    const int64_t N = heads_, NK = kv_heads_;
    const bool packed = key == nullptr;
    if (!(query.rank() == 3 && packed == (value == nullptr)))
      fail(who + ": query must be [B, S, D] with key and value both given or both omitted (packed QKV)");
    AttentionDims d;
    d.batch = query.dim(0);
    d.q_len = query.dim(1);
    d.q_heads = N;
    d.kv_heads = NK;
    d.head_size = d.v_head_size = query.dim(2) / (packed ? N + 2 * NK : N);
    const int64_t H = d.head_size, S = d.q_len, B = d.batch;
    if (!(packed ? query.dim(2) == (N + 2 * NK) * H
                 : (query.dim(2) == N * H && key->shape() == Shape{B, S, NK * H} && value->shape() == key->shape())))
      fail(who + ": query/key/value shapes do not fit num_heads " + std::to_string(N) + " and kv_num_heads " +
           std::to_string(NK));
    const std::vector<int64_t> seqlens_k = seqlens.to_int64_vector();
    const std::vector<int64_t> total_v = total_t.to_int64_vector();
    if (!(static_cast<int64_t>(seqlens_k.size()) == B && total_v.size() == 1))
      fail(who + ": seqlens_k must be [B] and total_sequence_length a scalar");
    const int64_t total = total_v[0];
    const bool first_prompt = S == total;
    if ((past_key == nullptr) != (past_value == nullptr)) fail(who + ": past_key and past_value go together");
    const int64_t past_buffer = past_key ? past_key->dim(2) : 0;
    if (past_key && !(past_key->shape() == Shape{B, NK, past_buffer, H} && past_value->shape() == past_key->shape()))
      fail(who + ": past_key/past_value " + shape_str(past_key->shape()) + " must be [B, kv_num_heads, P, H]");
    const int64_t present_len = std::max(total, past_buffer);
    // Tokens of batch b: seqlens_k[b] + 1, of which the last S are new (all of them in the first prompt).
    std::vector<int64_t> past_of(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tokens = seqlens_k[static_cast<size_t>(b)] + 1;
      past_of[static_cast<size_t>(b)] = first_prompt ? 0 : tokens - S;
      if (!(tokens >= 1 && tokens <= present_len && past_of[static_cast<size_t>(b)] >= 0 &&
            past_of[static_cast<size_t>(b)] <= past_buffer))
        fail(who + ": seqlens_k[" + std::to_string(b) + "] = " + std::to_string(tokens - 1) +
             " does not fit the caches and total_sequence_length " + std::to_string(total));
    }
    if (rotary_ && !(cos && sin && cos->rank() == 2 && cos->shape() == sin->shape() && 2 * cos->dim(1) <= H &&
                     cos->dtype() == query.dtype() && sin->dtype() == query.dtype()))
      fail(who + ": do_rotary needs cos_cache and sin_cache [max_position, rotary_dim / 2] of the query's type");
    d.kv_len = present_len;
    visit_float(query.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      using A = acc_t<E>;
      const int64_t width = query.dim(2);
      // Q and the new K, V as [B, S, heads, H] rows, rotated when do_rotary.
      std::vector<E> qe(static_cast<size_t>(B * S * N * H)), ke(static_cast<size_t>(B * S * NK * H)), ve(ke.size());
      const E* qsrc = query.data<E>();
      for (int64_t t = 0; t < B * S; ++t) {
        const E* row = qsrc + t * width;
        std::copy_n(row, N * H, qe.data() + t * N * H);
        std::copy_n(packed ? row + N * H : key->data<E>() + t * NK * H, NK * H, ke.data() + t * NK * H);
        std::copy_n(packed ? row + (N + NK) * H : value->data<E>() + t * NK * H, NK * H, ve.data() + t * NK * H);
      }
      if (rotary_) {
        const int64_t rot = 2 * cos->dim(1);
        const E *cd = cos->data<E>(), *sd = sin->data<E>();
        for (int64_t t = 0; t < B * S; ++t) {
          const int64_t pos = past_of[static_cast<size_t>(t / S)] + t % S;
          if (!(pos < cos->dim(0))) fail(who + ": position " + std::to_string(pos) + " outside the rotary caches");
          const int64_t c = pos * cos->dim(1);
          for (int64_t h = 0; h < N; ++h) {
            E* x = qe.data() + (t * N + h) * H;
            rotate_head(x, x, cd + c, sd + c, rot, H, interleaved_);
          }
          for (int64_t h = 0; h < NK; ++h) {
            E* x = ke.data() + (t * NK + h) * H;
            rotate_head(x, x, cd + c, sd + c, rot, H, interleaved_);
          }
        }
      }
      // The present caches: each batch's past tokens, then its new ones; the rest of the buffer is zero.
      Tensor present_k = Tensor::zeros(query.dtype(), {B, NK, present_len, H});
      Tensor present_v = Tensor::zeros(query.dtype(), {B, NK, present_len, H});
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < NK; ++h) {
          const int64_t p = past_of[static_cast<size_t>(b)];
          for (int c = 0; c < 2; ++c) {
            E* out = (c == 0 ? present_k : present_v).template data<E>() + (b * NK + h) * present_len * H;
            if (p > 0)
              std::copy_n((c == 0 ? past_key : past_value)->template data<E>() + (b * NK + h) * past_buffer * H, p * H,
                          out);
            const E* fresh = (c == 0 ? ke : ve).data();
            for (int64_t s = 0; s < S && p + s < present_len; ++s)
              std::copy_n(fresh + ((b * S + s) * NK + h) * H, H, out + (p + s) * H);
          }
        }
      std::vector<A> qh(qe.size()), kh, vh;
      widen(qe.data(), qh.data(), static_cast<int64_t>(qe.size()));
      const A* ka = as_acc<E>(present_k, kh);
      const A* va = as_acc<E>(present_v, vh);
      // Causal, and within the local window: query s of batch b sees keys (p + s - window, p + s].
      ScoreBias<A> bias(B, 1, S, present_len);
      const A neg_inf = -std::numeric_limits<A>::infinity();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t last = past_of[static_cast<size_t>(b)] + s;
          A* row = bias.row(b, 0, s);
          for (int64_t t = 0; t < present_len; ++t)
            if (t > last || (window_ > 0 && t < last - window_)) row[t] = neg_inf;
        }
      Tensor& y = ctx.allocate_output(0, query.dtype(), {B, S, N * H});
      AccOutput<E> ya(y);
      scaled_dot_product_attention<A>(d, bsnh_heads<const A>(qh.data(), S, H, N * H),
                                      bnsh_heads<const A>(ka, NK, present_len, H),
                                      bnsh_heads<const A>(va, NK, present_len, H), bias,
                                      attention_math(ctx.config(), query.dtype(), default_scale(scale_, H), softcap_),
                                      bsnh_heads(ya.data(), S, H, N * H));
      ya.finish();
      if (ctx.num_outputs() > 1 && ctx.output_requested(1)) ctx.set_output(1, present_k);
      if (ctx.num_outputs() > 2 && ctx.output_requested(2)) ctx.set_output(2, present_v);
    });
  }

 private:
  int64_t heads_, kv_heads_, window_;
  bool rotary_, interleaved_;
  float scale_, softcap_;
};

}  // namespace

// QK^T, PV and Attention's input projection are GEMMs (--accumulate); the softmax sums in float.
MPA_OP_TRAITS(kMs, "Attention",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting, .host_inputs = {6}});
MPA_REGISTER_OP(kMs, "Attention", MsAttentionOp, 1);
MPA_OP_TRAITS(kMs, "MultiHeadAttention",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting, .host_inputs = {8}});
MPA_REGISTER_OP(kMs, "MultiHeadAttention", MultiHeadAttentionOp, 1);
MPA_OP_TRAITS(kMs, "GroupQueryAttention",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting, .host_inputs = {5, 6}});
MPA_REGISTER_OP(kMs, "GroupQueryAttention", GroupQueryAttentionOp, 1);

}  // namespace mpa
