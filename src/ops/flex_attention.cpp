// FlexAttention (ai.onnx.preview 1): scaled dot-product attention over rank-4 (B, H, seq, head) inputs with
// two optional one-input subgraphs, run with the executor (ops/subgraph.h) so the audit sees their nodes:
//
//   scores = (Q sqrt(scale)) (K sqrt(scale))^T       in T (the inputs' type)
//   probs  = Softmax(score_mod(scores), axis=-1)     in P (softmax_precision: float32, or float64 for T double)
//   Y      = prob_mod(probs) V                        in P, rounded into T
//
// Query head h reads key/value head h / (Hq / Hkv) (GQA). Every intermediate lies on the format its spec
// type gives it: T's values on the format the run stores T in, P's on P's own (P = float32 stays fp32
// when T goes to fp16, as a model converted to fp16 keeps its float32 softmax_precision). The modifiers'
// nodes, like If/Loop/Scan bodies, run in the node's precision: the audit judges and re-runs every node
// it sees in the target format, so a subgraph computing in fp32 there would contradict its verdicts.
#include <cmath>
#include <memory>
#include <optional>

#include "backends/cpu/gemm.h"
#include "kernels/softmax.h"
#include "ops/compute_buffer.h"
#include "ops/subgraph.h"

namespace mpa {
namespace {

std::optional<DType> read_softmax_precision(const OpInit& init) {
  if (!init.has("softmax_precision")) return std::nullopt;
  switch (init.get_int("softmax_precision", 0)) {
    case 1: return DType::Float32;
    case 10: return DType::Float16;
    case 11: return DType::Float64;
    case 16: return DType::BFloat16;
    default:
      fail(init.node().label() + ": softmax_precision " + std::to_string(init.get_int("softmax_precision", 0)) +
           " is not float, float16, bfloat16 or double");
  }
}

std::unique_ptr<SubgraphRunner> optional_subgraph(const OpInit& init, const std::string& attribute) {
  return init.has(attribute) ? std::make_unique<SubgraphRunner>(init, attribute) : nullptr;
}

// Rounds a float32 tensor's values onto `format` (a narrower format it is stored in); other types are
// their own format already.
void round_onto(Tensor& t, Format format) {
  if (t.dtype() == DType::Float32 && format != Format::FP32 && format != Format::FP64)
    round_to_format(format, t.data<float>(), t.numel());
}

// t's values as type `to`, each rounded once, then onto `format`.
Tensor convert(const Tensor& t, DType to, Format format) {
  Tensor out(to, t.shape());
  visit_float(t.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    visit_float(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* in = t.data<From>();
      To* o = out.data<To>();
      parallel_for(t.numel(), 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = store<To>(static_cast<compute_t<To>>(load(in[i])));
      });
    });
  });
  round_onto(out, format);
  return out;
}

// t * factor in t's type, onto `format`.
Tensor scaled(const Tensor& t, double factor, Format format) {
  Tensor out(t.dtype(), t.shape());
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const T* in = t.data<T>();
    T* o = out.data<T>();
    parallel_for(t.numel(), 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = store<T>(A(load(in[i])) * A(factor));
    });
  });
  round_onto(out, format);
  return out;
}

// C[b, h] = A[b, h] op(B[b, h / group]) for a (B, H, M, K) and b (B, H / group, K, N), or (B, H / group, N, K)
// when trans_b; in a's type with `math`, onto `format`.
Tensor head_gemm(const Tensor& a, const Tensor& b, bool trans_b, const cpu::GemmMath& math, Format format) {
  const int64_t batch = a.dim(0), H = a.dim(1), Hb = b.dim(1), group = H / Hb, M = a.dim(2), K = a.dim(3);
  const int64_t N = trans_b ? b.dim(2) : b.dim(3);
  Tensor c(a.dtype(), {batch, H, M, N});
  if (c.numel() == 0) return c;
  std::vector<int64_t> ao(size_t(batch * H)), bo(ao.size()), co(ao.size());
  for (int64_t i = 0; i < batch * H; ++i) {
    ao[size_t(i)] = i * M * K;
    bo[size_t(i)] = ((i / H) * Hb + (i % H) / group) * K * N;
    co[size_t(i)] = i * M * N;
  }
  visit_float(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    std::vector<A> ah, bh;
    const A* pa = as_acc<T>(a, ah);
    const A* pb = as_acc<T>(b, bh);
    AccOutput<T> out(c);
    cpu::gemm_batched<A>(false, trans_b, M, N, K, A(1), pa, K, ao.data(), pb, trans_b ? K : N, bo.data(), A(0),
                         out.data(), N, co.data(), batch * H, math);
    out.finish();
  });
  round_onto(c, format);
  return c;
}

// The format a value of type `t` keeps inside the op when the spec fixes its type (P): float32 stays fp32.
Format fixed_format(DType t) {
  switch (t) {
    case DType::Float16: return Format::FP16;
    case DType::BFloat16: return Format::BF16;
    case DType::Float64: return Format::FP64;
    default: return Format::FP32;
  }
}

class FlexAttentionOp : public OpKernel {
 public:
  explicit FlexAttentionOp(const OpInit& init)
      : scale_(init.has("scale") ? std::optional<float>(init.get_float("scale", 0.0f)) : std::nullopt),
        softmax_precision_(read_softmax_precision(init)),
        score_mod_(optional_subgraph(init, "score_mod")),
        prob_mod_(optional_subgraph(init, "prob_mod")) {
    for (const SubgraphRunner* mod : {score_mod_.get(), prob_mod_.get()})
      if (mod && (mod->graph().inputs.size() != 1 || mod->graph().outputs.size() != 1))
        fail(init.node().label() + ": score_mod and prob_mod must take one input and give one output");
  }

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
      fail(label + ": Q, K, V must be rank 4, got " + shape_str(q.shape()) + ", " + shape_str(k.shape()) + ", " +
           shape_str(v.shape()));
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
      fail(label + ": Q, K, V must share one type, got " + dtype_name(q.dtype()) + ", " + dtype_name(k.dtype()) + ", " +
           dtype_name(v.dtype()));
    if (!dtype_is_float(q.dtype())) fail(label + ": element type " + dtype_name(q.dtype()) + " is not allowed");
    const int64_t Hq = q.dim(1), Hkv = k.dim(1);
    if (k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) || v.dim(1) != Hkv || v.dim(2) != k.dim(2) || k.dim(3) != q.dim(3))
      fail(label + ": shapes Q " + shape_str(q.shape()) + ", K " + shape_str(k.shape()) + ", V " +
           shape_str(v.shape()) + " do not fit (B, Hq, L, E), (B, Hkv, S, E), (B, Hkv, S, Ev)");
    if (Hkv <= 0 || Hq % Hkv != 0)
      fail(label + ": Q's " + std::to_string(Hq) + " heads are not a multiple of K's " + std::to_string(Hkv));
    const ExecConfig& config = ctx.config();
    const DType T = q.dtype();
    const DType P = softmax_precision_.value_or(T == DType::Float64 ? DType::Float64 : DType::Float32);
    const Format t_format = value_format(config, T), p_format = fixed_format(P);

    // sqrt(scale) in float32, as a constant of type T.
    const float root = std::sqrt(scale_.value_or(float(1.0 / std::sqrt(double(q.dim(3))))));
    const double factor = T == DType::Float64 ? double(root) : double(round_to_format(t_format, root));
    const Tensor scores_t =
        head_gemm(scaled(q, factor, t_format), scaled(k, factor, t_format), true, gemm_math(config, T), t_format);

    const Shape scores_shape = scores_t.shape();
    auto modify = [&](const std::unique_ptr<SubgraphRunner>& mod, Tensor x, const char* name) {
      if (!mod) return x;
      Tensor y = std::move(mod->run({std::move(x)}, ctx)[0]);
      if (y.shape() != scores_shape || y.dtype() != P)
        fail(label + ": " + name + " gave " + dtype_name(y.dtype()) + " " + shape_str(y.shape()) + ", expected " +
             dtype_name(P) + " " + shape_str(scores_shape));
      return y;
    };
    const Tensor scores = modify(score_mod_, convert(scores_t, P, p_format), "score_mod");
    Tensor probs(P, scores_shape);
    const int64_t S = scores_shape[3];
    visit_float(P, [&](auto tag) {
      using PT = typename decltype(tag)::type;
      const PT* in = scores.data<PT>();
      PT* out = probs.data<PT>();
      parallel_for(probs.numel() / std::max<int64_t>(S, 1), std::max<int64_t>(1, 8192 / std::max<int64_t>(S, 1)),
                   [&](int64_t b, int64_t e) {
                     compute_t<PT>* tmp = scratch<compute_t<PT>>(0, size_t(S));
                     for (int64_t r = b; r < e; ++r) SoftmaxRow{}(in + r * S, out + r * S, S, 1, tmp);
                   });
    });
    probs = modify(prob_mod_, std::move(probs), "prob_mod");

    const bool half_sums =
        config.accumulation == Accumulation::FP16 && (p_format == Format::FP16 || p_format == Format::BF16);
    const cpu::GemmMath pv_math{half_sums ? p_format : Format::FP32, config.tf32_gemm_inputs};
    const Tensor y_p = head_gemm(probs, convert(v, P, p_format), false, pv_math, p_format);
    ctx.set_output(0, convert(y_p, T, t_format));
  }

 private:
  std::optional<float> scale_;
  std::optional<DType> softmax_precision_;
  std::unique_ptr<SubgraphRunner> score_mod_, prob_mod_;
};

}  // namespace

// Its two GEMMs follow --accumulate like MatMul; the softmax rows sum in softmax_precision (fp32 by default).
MPA_OP_TRAITS("ai.onnx.preview", "FlexAttention",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("ai.onnx.preview", "FlexAttention", FlexAttentionOp, 1);

}  // namespace mpa
