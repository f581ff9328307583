// LinearAttention (opset 27): the recurrent form of linear attention, token by token, for every batch
// and key/value head; q_num_heads / kv_num_heads query heads read each key/value head's state (GQA).
//
//   linear       S_t = S_{t-1} + k_t v_t^T
//   gated        S_t = exp(g_t) S_{t-1} + k_t v_t^T                      (g_t per head or per key dim)
//   delta        S_t = S_{t-1} + k_t (beta_t (v_t - S_{t-1}^T k_t))^T
//   gated_delta  S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - (exp(g_t) S_{t-1})^T k_t))^T
//   o_t = scale q_t^T S_t
//
// Query, key, value, decay and beta pack heads into their last dim, (B, T, H * D); the state is
// (B, H_kv, d_k, d_v) in type S, which may differ from the activations' T. As the reference and the
// chunked GPU kernels (flash-linear-attention) do, the state stays in float through the whole sequence
// and is rounded into S once, at the end; outputs are rounded into T once per element. chunk_size is a
// tuning hint of chunked kernels and does not change the result.
#include <algorithm>
#include <cmath>

#include "kernels/math.h"
#include "ops/compute_buffer.h"
#include "ops/op.h"

namespace mpa {
namespace {

enum class UpdateRule : uint8_t { Linear, Gated, Delta, GatedDelta };

UpdateRule read_rule(const OpInit& init) {
  const std::string rule = init.get_string("update_rule", "gated_delta");
  if (rule == "linear") return UpdateRule::Linear;
  if (rule == "gated") return UpdateRule::Gated;
  if (rule == "delta") return UpdateRule::Delta;
  if (rule == "gated_delta") return UpdateRule::GatedDelta;
  fail(init.node().label() + ": update_rule '" + rule + "' is not one of 'linear', 'gated', 'delta', 'gated_delta'");
}

bool activation_type(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }

std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> values(static_cast<size_t>(t.numel()));
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    widen(t.data<T>(), values.data(), t.numel());
  });
  return values;
}

void store_floats(const std::vector<float>& values, Tensor& t) {
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    narrow(values.data(), t.data<T>(), t.numel());
  });
}

class LinearAttentionOp : public OpKernel {
 public:
  explicit LinearAttentionOp(const OpInit& init)
      : rule_(read_rule(init)),
        scale_(init.get_float("scale", 0.0f)),
        q_heads_(init.require_int("q_num_heads")),
        kv_heads_(init.require_int("kv_num_heads")) {
    if (!(q_heads_ > 0 && kv_heads_ > 0 && q_heads_ % kv_heads_ == 0))
      fail(init.node().label() + ": q_num_heads (" + std::to_string(q_heads_) +
           ") must be a positive multiple of kv_num_heads (" + std::to_string(kv_heads_) + ")");
  }

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    const Tensor* past = ctx.optional_input(3);
    const Tensor* decay = ctx.optional_input(4);
    const Tensor* beta = ctx.optional_input(5);
    const bool gated = rule_ == UpdateRule::Gated || rule_ == UpdateRule::GatedDelta;
    const bool delta = rule_ == UpdateRule::Delta || rule_ == UpdateRule::GatedDelta;
    if (gated != (decay != nullptr))
      fail(label + ": this update_rule " + (gated ? "requires" : "forbids") + " the decay input");
    if (delta != (beta != nullptr))
      fail(label + ": this update_rule " + (delta ? "requires" : "forbids") + " the beta input");
    if (!activation_type(q.dtype()))
      fail(label + ": element type " + dtype_name(q.dtype()) + " is not allowed (float, float16, bfloat16)");
    for (const Tensor* t : {&k, &v, decay, beta})
      if (t && t->dtype() != q.dtype())
        fail(label + ": inputs are " + dtype_name(q.dtype()) + " and " + dtype_name(t->dtype()) +
             ", expected one type");
    for (const Tensor* t : {&q, &k, &v, decay, beta})
      if (t && t->rank() != 3)
        fail(label + ": packed inputs must be rank 3 (B, T, H * D), got " + shape_str(t->shape()));
    const int64_t B = q.dim(0), T = q.dim(1);
    if (q.dim(2) % q_heads_ != 0)
      fail(label + ": query's last dim " + std::to_string(q.dim(2)) + " is not a multiple of q_num_heads");
    const int64_t dk = q.dim(2) / q_heads_, Hq = q_heads_, Hkv = kv_heads_, group = Hq / Hkv;
    if (v.dim(2) % Hkv != 0)
      fail(label + ": value's last dim " + std::to_string(v.dim(2)) + " is not a multiple of kv_num_heads");
    const int64_t dv = v.dim(2) / Hkv;
    // (B, T, last) with last one of the allowed packed widths.
    auto expect = [&](const Tensor& t, const char* name, int64_t last, int64_t other_last) {
      if (t.dim(0) != B || t.dim(1) != T || (t.dim(2) != last && t.dim(2) != other_last))
        fail(label + ": " + name + " has shape " + shape_str(t.shape()) + ", expected " + shape_str({B, T, last}) +
             (other_last != last ? " or " + shape_str({B, T, other_last}) : std::string()));
    };
    expect(k, "key", Hkv * dk, Hkv * dk);
    expect(v, "value", Hkv * dv, Hkv * dv);
    if (decay) expect(*decay, "decay", Hkv * dk, Hkv);
    if (beta) expect(*beta, "beta", Hkv, 1);
    const Shape state_shape{B, Hkv, dk, dv};
    if (past && past->shape() != state_shape)
      fail(label + ": past_state has shape " + shape_str(past->shape()) + ", expected " + shape_str(state_shape));
    if (past && !activation_type(past->dtype()))
      fail(label + ": past_state type " + dtype_name(past->dtype()) + " is not allowed (float, float16, bfloat16)");

    const std::vector<float> qf = floats_of(q), kf = floats_of(k), vf = floats_of(v);
    const std::vector<float> gf = decay ? floats_of(*decay) : std::vector<float>();
    const std::vector<float> bf = beta ? floats_of(*beta) : std::vector<float>();
    std::vector<float> state = past ? floats_of(*past) : std::vector<float>(size_t(B * Hkv * dk * dv), 0.0f);
    std::vector<float> out(size_t(B * T * Hq * dv));
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(float(dk));
    const bool decay_per_dim = decay && decay->dim(2) == Hkv * dk;
    const int64_t beta_heads = beta ? beta->dim(2) : 0;

    parallel_for(B * Hkv, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> update(static_cast<size_t>(dv));
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / Hkv, h = bh % Hkv;
        float* S = state.data() + bh * dk * dv;  // [dk][dv]
        for (int64_t t = 0; t < T; ++t) {
          const int64_t token = b * T + t;
          const float* kt = kf.data() + (token * Hkv + h) * dk;
          const float* vt = vf.data() + (token * Hkv + h) * dv;
          if (gated)
            for (int64_t d = 0; d < dk; ++d) {
              const float g = decay_per_dim ? gf[size_t((token * Hkv + h) * dk + d)] : gf[size_t(token * Hkv + h)];
              const float factor = dmath::exp(g);
              for (int64_t m = 0; m < dv; ++m) S[d * dv + m] *= factor;
            }
          if (delta) {
            const float rate = bf[size_t(token * beta_heads + (beta_heads == 1 ? 0 : h))];
            for (int64_t m = 0; m < dv; ++m) {
              float retrieved = 0.0f;
              for (int64_t d = 0; d < dk; ++d) retrieved += S[d * dv + m] * kt[d];
              update[size_t(m)] = rate * (vt[m] - retrieved);
            }
          } else {
            std::copy(vt, vt + dv, update.begin());
          }
          for (int64_t d = 0; d < dk; ++d)
            for (int64_t m = 0; m < dv; ++m) S[d * dv + m] += kt[d] * update[size_t(m)];
          for (int64_t hq = h * group; hq < (h + 1) * group; ++hq) {
            const float* qt = qf.data() + (token * Hq + hq) * dk;
            float* ot = out.data() + (token * Hq + hq) * dv;
            for (int64_t m = 0; m < dv; ++m) {
              float sum = 0.0f;
              for (int64_t d = 0; d < dk; ++d) sum += qt[d] * S[d * dv + m];
              ot[m] = scale * sum;
            }
          }
        }
      }
    });
    store_floats(out, ctx.allocate_output(0, q.dtype(), {B, T, Hq * dv}));
    store_floats(state, ctx.allocate_output(1, past ? past->dtype() : q.dtype(), state_shape));
  }

 private:
  UpdateRule rule_;
  float scale_;
  int64_t q_heads_, kv_heads_;
};

}  // namespace

// The state and every dot product sum in fp32 whatever T and S are, as the reference and the GPU kernels
// (flash-linear-attention keeps its chunk states in fp32 registers) do.
MPA_OP_TRAITS("", "LinearAttention", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "LinearAttention", LinearAttentionOp, 27);

}  // namespace mpa
