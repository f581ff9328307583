// com.microsoft EmbedLayerNormalization (onnxruntime contrib op, the fused BERT embedding layer): for every
// token (b, s), e = word_embedding[input_ids] + position_embedding[position] (+ segment_embedding[segment_ids]),
// then LayerNormalization of e with gamma and beta over the hidden size H. position is position_ids[b, s]
// (position_ids [B, S] or [1, S]) or s when absent. Outputs: output [B, S, H]; mask_index int32 [B], the
// number of ones in each row of mask (0 without a mask); embedding_sum [B, S, H], e stored once. Ids out of
// their table fail naming the node, as onnxruntime fails.
#include <algorithm>

#include "ops/normalize.h"
#include "ops/op.h"

namespace mpa {
namespace {

// An int32 (or int64) id tensor's elements.
std::vector<int64_t> read_ids(const std::string& who, const Tensor& t, const std::string& what) {
  std::vector<int64_t> ids(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::Int32)
    std::copy(t.data<int32_t>(), t.data<int32_t>() + t.numel(), ids.begin());
  else if (t.dtype() == DType::Int64)
    std::copy(t.data<int64_t>(), t.data<int64_t>() + t.numel(), ids.begin());
  else
    fail(who + ": " + what + " must be int32, got " + dtype_name(t.dtype()));
  return ids;
}

// A [rows, H] embedding table, checked against the hidden size.
int64_t table_rows(const std::string& who, const Tensor& table, int64_t hidden, DType dtype, const std::string& what) {
  if (!(table.rank() == 2 && table.dim(1) == hidden && table.dtype() == dtype))
    fail(who + ": " + what + " must be " + dtype_name(dtype) + " [rows, " + std::to_string(hidden) + "], got " +
         dtype_name(table.dtype()) + " " + shape_str(table.shape()));
  return table.dim(0);
}

class EmbedLayerNormalizationOp : public OpKernel {
 public:
  explicit EmbedLayerNormalizationOp(const OpInit& init) : epsilon_(init.get_float("epsilon", 1e-12f)) {}

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& input_ids = ctx.input(0);
    const Tensor* segment_ids = ctx.optional_input(1);
    const Tensor& word = ctx.input(2);
    const Tensor& position = ctx.input(3);
    const Tensor* segment = ctx.optional_input(4);
    const Tensor* mask = ctx.optional_input(7);
    const Tensor* position_ids = ctx.optional_input(8);
    if (!(input_ids.rank() == 2))
      fail(who + ": input_ids must be [batch, sequence], got " + shape_str(input_ids.shape()));
    if (!(word.rank() == 2))
      fail(who + ": word_embedding must be [vocabulary, hidden], got " + shape_str(word.shape()));
    if ((segment_ids == nullptr) != (segment == nullptr))
      fail(who + ": segment_ids and segment_embedding must be given together");
    const int64_t B = input_ids.dim(0), S = input_ids.dim(1), H = word.dim(1);
    const DType dtype = word.dtype();
    if (!dtype_is_float(dtype)) fail(who + ": embeddings must be floating-point, got " + dtype_name(dtype));
    const int64_t words = table_rows(who, word, H, dtype, "word_embedding");
    const int64_t positions = table_rows(who, position, H, dtype, "position_embedding");
    const int64_t segments = segment ? table_rows(who, *segment, H, dtype, "segment_embedding") : 0;
    const std::vector<int64_t> ids = read_ids(who, input_ids, "input_ids");
    auto same_shape = [&](const Tensor* t, const std::string& what) {
      if (t && !(t->shape() == input_ids.shape()))
        fail(who + ": " + what + " of shape " + shape_str(t->shape()) + " must match input_ids " +
             shape_str(input_ids.shape()));
    };
    same_shape(segment_ids, "segment_ids");
    same_shape(mask, "mask");
    const std::vector<int64_t> seg_ids =
        segment_ids ? read_ids(who, *segment_ids, "segment_ids") : std::vector<int64_t>{};
    const std::vector<int64_t> pos_ids =
        position_ids ? read_ids(who, *position_ids, "position_ids") : std::vector<int64_t>{};
    if (position_ids && !(position_ids->rank() == 2 && (position_ids->dim(0) == B || position_ids->dim(0) == 1) &&
                          position_ids->dim(1) == S))
      fail(who + ": position_ids must be [batch, sequence] or [1, sequence], got " + shape_str(position_ids->shape()));
    const int64_t pos_batch_step = position_ids && position_ids->dim(0) == B ? S : 0;
    // Every id is checked before any row is computed, so that a bad id fails whatever the thread count.
    auto check = [&](int64_t id, int64_t rows, const std::string& what) {
      if (!(id >= 0 && id < rows))
        fail(who + ": " + what + " " + std::to_string(id) + " out of range [0, " + std::to_string(rows) + ")");
    };
    for (int64_t t = 0; t < B * S; ++t) {
      check(ids[t], words, "input_ids");
      check(pos_ids.empty() ? t % S : pos_ids[(t / S) * pos_batch_step + t % S], positions, "position id");
      if (segment) check(seg_ids[t], segments, "segment_ids");
    }

    const Shape out_shape = {B, S, H};
    Tensor& y = ctx.allocate_output(0, dtype, out_shape);
    if (ctx.num_outputs() > 1 && ctx.output_requested(1)) {
      int32_t* mask_index = ctx.allocate_output(1, DType::Int32, {B}).data<int32_t>();
      const std::vector<int64_t> m = mask ? read_ids(who, *mask, "mask") : std::vector<int64_t>{};
      for (int64_t b = 0; b < B; ++b)
        mask_index[b] = mask ? static_cast<int32_t>(std::count(m.begin() + b * S, m.begin() + (b + 1) * S, 1)) : 0;
    }
    Tensor* sum_t =
        ctx.num_outputs() > 2 && ctx.output_requested(2) ? &ctx.allocate_output(2, dtype, out_shape) : nullptr;
    visit_float(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const Shape hidden = {H};
      const std::vector<A> gamma = param_expanded<A>(ctx.input(5), hidden, who, "gamma");
      const std::vector<A> beta = param_expanded<A>(ctx.input(6), hidden, who, "beta");
      const A eps = static_cast<A>(epsilon_);
      parallel_for(B * S, std::max<int64_t>(1, 16384 / std::max<int64_t>(H, 1)), [&](int64_t b, int64_t e) {
        std::vector<A> row(static_cast<size_t>(H));
        for (int64_t t = b; t < e; ++t) {
          const int64_t pos = pos_ids.empty() ? t % S : pos_ids[(t / S) * pos_batch_step + t % S];
          const T* w = word.data<T>() + ids[t] * H;
          const T* p = position.data<T>() + pos * H;
          for (int64_t i = 0; i < H; ++i) row[i] = load(w[i]) + load(p[i]);
          if (segment) {
            const T* s = segment->data<T>() + seg_ids[t] * H;
            for (int64_t i = 0; i < H; ++i) row[i] += load(s[i]);
          }
          if (sum_t)
            for (int64_t i = 0; i < H; ++i) sum_t->data<T>()[t * H + i] = store<T>(row[i]);
          normalize_sum_row<MeanInvStdRow>(row.data(), y.data<T>() + t * H, H, eps, gamma.data(), beta.data());
        }
      });
    });
  }

 private:
  float epsilon_;
};

}  // namespace

MPA_OP_TRAITS("com.microsoft", "EmbedLayerNormalization",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {0, 1, 5, 6, 7, 8}});
MPA_REGISTER_OP("com.microsoft", "EmbedLayerNormalization", EmbedLayerNormalizationOp, 1);

}  // namespace mpa
