// Scaled dot-product attention and rotary embedding, the cores that every attention op shares (ONNX
// Attention and RotaryEmbedding; com.microsoft Attention, MultiHeadAttention, GroupQueryAttention and
// RotaryEmbedding). Ops translate their layouts, masks and caches into head views and an additive score
// bias; the core runs, per (batch, query head),
//   scores = scale * Q K^T  ->  softcap  ->  + bias  ->  softmax  ->  Y = P V
// query head h reading key/value head h / (q_heads / kv_heads) (grouped-query attention; ONNX's
// np.repeat of the kv heads and ONNX Runtime's GQA kernels agree on this order).
//
// Precision (docs/numerics.md): both products are GEMMs under the config's GEMM math (--accumulate, TF32);
// softmax runs in float. Where the values lie on a 16-bit grid, the intermediates are rounded to it where
// ONNX Runtime's unfused CUDA attention stores them in fp16: the scaled scores (the QK^T GEMM's output,
// scale applied as its alpha), the softcapped scores, and the probabilities (the softmax kernel's output,
// read by the PV GEMM); the mask/bias is added in float inside the softmax kernel.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cpu/gemm.h"
#include "ops/op.h"
#include "tensor/formats.h"

namespace mpa {

// Heads of Q, K, V or Y: element (b, h, s, d) at data[b * batch + h * head + s * row + d].
template <class E>
struct HeadView {
  E* data = nullptr;
  int64_t batch = 0, head = 0, row = 0;
};
// [B, S, N * H] storage (ONNX 3-D inputs, packed projections: rows `width` apart, head 0 at data).
template <class E>
HeadView<E> bsnh_heads(E* data, int64_t seq, int64_t head_size, int64_t width) {
  return {data, seq * width, head_size, width};
}
// [B, N, S, H] storage.
template <class E>
HeadView<E> bnsh_heads(E* data, int64_t heads, int64_t seq, int64_t head_size) {
  return {data, heads * seq * head_size, seq * head_size, head_size};
}

struct AttentionDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_size = 0, v_head_size = 0;
};

// An additive bias over the scores, dense [batches, heads, q_len, kv_len] with batches 1 or B and heads 1
// or q_heads (broadcast by zero strides): masks become -inf (ONNX) or mask_filter_value (com.microsoft).
template <class A>
struct ScoreBias {
  int64_t batches = 1, heads = 1, q_len = 0, kv_len = 0;
  std::vector<A> values;

  ScoreBias() = default;
  ScoreBias(int64_t batches_, int64_t heads_, int64_t q_len_, int64_t kv_len_)
      : batches(batches_),
        heads(heads_),
        q_len(q_len_),
        kv_len(kv_len_),
        values(static_cast<size_t>(batches_ * heads_ * q_len_ * kv_len_), A(0)) {}
  A* row(int64_t b, int64_t h, int64_t s) { return values.data() + ((b * heads + h) * q_len + s) * kv_len; }
  const A* row_of_head(int64_t b, int64_t h, int64_t s) const {
    if (values.empty()) return nullptr;
    return values.data() + (((batches == 1 ? 0 : b) * heads + (heads == 1 ? 0 : h)) * q_len + s) * kv_len;
  }
  // Sets key positions [from, to) of every row of batch b (batches must be B) to `value`.
  void mask_keys(int64_t b, int64_t from, int64_t to, A value) {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < q_len; ++s)
        for (int64_t t = from; t < to; ++t) row(b, h, s)[t] = value;
  }
  // Causal: query s (at absolute position past + s) sees keys t <= past + s.
  void mask_future(int64_t past, A value) {
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t s = 0; s < q_len; ++s)
          for (int64_t t = past + s + 1; t < kv_len; ++t) row(b, h, s)[t] = value;
  }
};

// Writes the cache [batch, heads, past_len + len, dim]: each head's `past_len` rows of `past` ([batch, heads,
// past_len, dim]; nullptr when past_len is 0) followed by its `len` rows of x.
template <class E>
void write_cache(E* cache, const E* past, int64_t past_len, HeadView<const E> x, int64_t batch, int64_t heads,
                 int64_t len, int64_t dim) {
  const int64_t total = past_len + len;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      E* out = cache + (b * heads + h) * total * dim;
      if (past_len > 0) std::copy_n(past + (b * heads + h) * past_len * dim, past_len * dim, out);
      for (int64_t s = 0; s < len; ++s)
        std::copy_n(x.data + b * x.batch + h * x.head + s * x.row, dim, out + (past_len + s) * dim);
    }
}

// Which intermediate the optional scores output (ONNX qk_matmul_output, [B, q_heads, S, T]) holds.
enum class ScoresStage : uint8_t { None, Product, Softcapped, Biased, Probabilities };

struct AttentionMath {
  double scale = 1;
  double softcap = 0;                   // > 0: scores = softcap * tanh(scores / softcap)
  Format intermediates = Format::FP32;  // FP16/BF16: the grid scores and probabilities are stored on
  cpu::GemmMath gemm;
};
// Rounds n values onto the grid where an unfused runtime stores an intermediate (FP32 and double values stay).
template <class A>
void store_intermediates(Format format, A* values, int64_t n) {
  if constexpr (std::is_same_v<A, float>)
    if (format != Format::FP32) round_to_format(format, values, n);
}
// The math of attention on `dtype` values under `config` (module comment).
AttentionMath attention_math(const ExecConfig& config, DType dtype, double scale, double softcap);

// Y = attention(Q, K, V); `scores` (optional) receives the stage's [B, q_heads, S, T] values. A = float or
// double (16-bit inputs are widened first). Y's heads are written, nothing else.
template <class A>
void scaled_dot_product_attention(const AttentionDims& dims, HeadView<const A> q, HeadView<const A> k,
                                  HeadView<const A> v, const ScoreBias<A>& bias, const AttentionMath& math,
                                  HeadView<A> y, A* scores = nullptr, ScoresStage stage = ScoresStage::None);

// Rotary position embedding of one head vector x (head_size contiguous values) into y: the first
// rotary_dim values are rotated in pairs, (x[2i], x[2i+1]) when interleaved, else (x[i], x[i + rotary_dim/2]),
// by the angles whose cos/sin are cos[i], sin[i] (rotary_dim / 2 each); the rest is copied. Math in float
// (double for float64), one rounding into T.
template <class T, class C>
void rotate_head(const T* x, T* y, const C* cos, const C* sin, int64_t rotary_dim, int64_t head_size,
                 bool interleaved) {
  using A = compute_t<T>;
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
    const A x1 = static_cast<A>(load(x[i1])), x2 = static_cast<A>(load(x[i2]));
    const A c = static_cast<A>(load(cos[i])), s = static_cast<A>(load(sin[i]));
    y[i1] = store<T>(c * x1 - s * x2);
    y[i2] = store<T>(s * x1 + c * x2);
  }
  for (int64_t i = rotary_dim; i < head_size; ++i) y[i] = x[i];
}

}  // namespace mpa
