// The scaled dot-product attention core (ops/attention.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/softmax.h"
#include "ops/attention.h"
#include "ops/compute_buffer.h"

namespace mpa {

AttentionMath attention_math(const ExecConfig& config, DType dtype, double scale, double softcap) {
  const Format values = value_format(config, dtype);
  AttentionMath math;
  math.scale = scale;
  math.softcap = softcap;
  // FP8 storage keeps attention's own intermediates in float: FP8 recipes run attention in 16 bits or wider.
  math.intermediates = values == Format::FP16 || values == Format::BF16 ? values : Format::FP32;
  math.gemm = gemm_math(config, dtype);
  return math;
}

template <class A>
void scaled_dot_product_attention(const AttentionDims& dims, HeadView<const A> q, HeadView<const A> k,
                                  HeadView<const A> v, const ScoreBias<A>& bias, const AttentionMath& math,
                                  HeadView<A> y, A* scores_out, ScoresStage stage) {
  const int64_t B = dims.batch, N = dims.q_heads, S = dims.q_len, T = dims.kv_len;
  const int64_t count = B * N, group = N / dims.kv_heads;
  if (count == 0 || S == 0 || dims.v_head_size == 0) return;
  std::vector<int64_t> q_off(static_cast<size_t>(count)), k_off(q_off.size()), v_off(q_off.size()), p_off(q_off.size()),
      y_off(q_off.size());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t b = i / N, h = i % N, kv = h / group;
    const size_t u = static_cast<size_t>(i);
    q_off[u] = b * q.batch + h * q.head;
    k_off[u] = b * k.batch + kv * k.head;
    v_off[u] = b * v.batch + kv * v.head;
    p_off[u] = i * S * T;
    y_off[u] = b * y.batch + h * y.head;
  }
  if (T == 0) {  // no keys: every output is an empty sum
    for (int64_t i = 0; i < count; ++i)
      for (int64_t s = 0; s < S; ++s)
        std::fill_n(y.data + y_off[static_cast<size_t>(i)] + s * y.row, dims.v_head_size, A(0));
    return;
  }
  std::vector<A> probs(static_cast<size_t>(count * S * T));
  cpu::gemm_batched<A>(false, true, S, T, dims.head_size, static_cast<A>(math.scale), q.data, q.row, q_off.data(),
                       k.data, k.row, k_off.data(), A(0), probs.data(), T, p_off.data(), count, math.gemm);
  const A cap = static_cast<A>(math.softcap);
  auto keep = [&](ScoresStage at, const A* row, int64_t r) {
    if (stage == at) std::memcpy(scores_out + r * T, row, static_cast<size_t>(T) * sizeof(A));
  };
  parallel_for(count * S, std::max<int64_t>(1, 4096 / std::max<int64_t>(T, 1)), [&](int64_t begin, int64_t end) {
    A* tmp = scratch<A>(0, static_cast<size_t>(T));
    for (int64_t r = begin; r < end; ++r) {
      A* row = probs.data() + r * T;
      store_intermediates(math.intermediates, row, T);
      keep(ScoresStage::Product, row, r);
      if (cap > A(0)) {
        for (int64_t t = 0; t < T; ++t) row[t] = cap * std::tanh(row[t] / cap);
        store_intermediates(math.intermediates, row, T);
      }
      keep(ScoresStage::Softcapped, row, r);
      const int64_t i = r / S, s = r % S;
      if (const A* add = bias.row_of_head(i / N, i % N, s))
        for (int64_t t = 0; t < T; ++t) row[t] += add[t];
      keep(ScoresStage::Biased, row, r);
      SoftmaxRow{}(row, row, T, int64_t{1}, tmp);
      store_intermediates(math.intermediates, row, T);
      keep(ScoresStage::Probabilities, row, r);
    }
  });
  cpu::gemm_batched<A>(false, false, S, dims.v_head_size, T, A(1), probs.data(), T, p_off.data(), v.data, v.row,
                       v_off.data(), A(0), y.data, y.row, y_off.data(), count, math.gemm);
}

template void scaled_dot_product_attention<float>(const AttentionDims&, HeadView<const float>, HeadView<const float>,
                                                  HeadView<const float>, const ScoreBias<float>&, const AttentionMath&,
                                                  HeadView<float>, float*, ScoresStage);
template void scaled_dot_product_attention<double>(const AttentionDims&, HeadView<const double>, HeadView<const double>,
                                                   HeadView<const double>, const ScoreBias<double>&,
                                                   const AttentionMath&, HeadView<double>, double*, ScoresStage);

}  // namespace mpa
