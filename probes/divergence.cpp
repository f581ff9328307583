#include "probes/divergence.h"

#include "probes/fast_paths.h"
#include "tensor/format_storage.h"

namespace mpa::probes {

// Chunks (double sums) and whole probes (exact sums) carry the same fields; ExactSum::add takes both.
template <class Counts> void Divergence::add_counts(const Counts& o) {
  compared += o.compared;
  ref_finite += o.ref_finite;
  nan += o.nan;
  inf += o.inf;
  mismatches += o.mismatches;
  max_abs = std::max(max_abs, o.max_abs);
  max_rel = std::max(max_rel, o.max_rel);
  max_ulp = std::max(max_ulp, o.max_ulp);
  sum_abs.add(o.sum_abs);
  sum_sq_err.add(o.sum_sq_err);
  sum_ref_sq.add(o.sum_ref_sq);
  sum_tgt_sq.add(o.sum_tgt_sq);
  sum_ref_tgt.add(o.sum_ref_tgt);
  sum_ulp.add(o.sum_ulp);
}

void Divergence::absorb(const kernels::DivergenceChunk& c) { add_counts(c); }

void Divergence::merge(const Divergence& o) {
  add_counts(o);
  const bool other_worse = o.worst_sample >= 0 &&
                           (o.worst_sample_max_abs > worst_sample_max_abs ||
                            (o.worst_sample_max_abs == worst_sample_max_abs && o.worst_sample < worst_sample));
  if (worst_sample < 0 || other_worse) {
    worst_sample = o.worst_sample;
    worst_sample_max_abs = o.worst_sample_max_abs;
  }
}

Divergence Divergence::of(const Tensor& ref, const Tensor& tgt, const Params& params, int64_t sample,
                          ExpHistogram* target_hist) {
  return of_each(ref, {&tgt}, params, sample, {target_hist}).front();
}

std::vector<Divergence> Divergence::of_each(const Tensor& ref, const std::vector<const Tensor*>& targets,
                                            const Params& params, int64_t sample,
                                            const std::vector<ExpHistogram*>& target_hists) {
  return of_runs(ref, nullptr, targets, params, sample, target_hists, {});
}

std::vector<Divergence> Divergence::of_stored_and_each(const Tensor& ref, const StoredReference& stored,
                                                       const std::vector<const Tensor*>& targets,
                                                       const Params& params, int64_t sample,
                                                       const std::vector<ExpHistogram*>& target_hists,
                                                       const ChunkVisitor& visit_chunk) {
  return of_runs(ref, &stored, targets, params, sample, target_hists, visit_chunk);
}

std::vector<Divergence> Divergence::of_runs(const Tensor& ref, const StoredReference* stored,
                                            const std::vector<const Tensor*>& targets, const Params& params,
                                            int64_t sample, const std::vector<ExpHistogram*>& target_hists,
                                            const ChunkVisitor& visit_chunk) {
  // Checked here, not in the chunks: those run in a parallel region, which an exception must not leave.
  if (!(dtype_is_float(ref.dtype()))) fail("divergence of a " + dtype_name(ref.dtype()) + " tensor");
  for (const Tensor* tgt : targets) {
    if (!(ref.numel() == tgt->numel()))
      fail("reference and target tensors differ in size: " + shape_str(ref.shape()) + " vs " + shape_str(tgt->shape()));
    if (!(dtype_is_float(tgt->dtype()))) fail("divergence from a " + dtype_name(tgt->dtype()) + " tensor");
  }
  // Runs in result order: the stored reference (when asked for) first, then the targets.
  const size_t first_target = stored ? 1 : 0, count = first_target + targets.size();
  auto hist_of = [&](size_t j) {
    return j >= first_target && j - first_target < target_hists.size() ? target_hists[j - first_target] : nullptr;
  };
  // The vector kernels take unscaled float32 runs; NaN/Inf chunks, other types and scaled grids go per element.
  bool vector_kernels = ref.dtype() == DType::Float32 && params.scale == 1.f;
  for (const Tensor* tgt : targets) vector_kernels = vector_kernels && tgt->dtype() == DType::Float32;
  std::vector<Divergence> out(count);
  using Chunks = std::vector<Chunk>;
  chunked<Chunks>(
      ref.numel(),
      [&](int64_t begin, int64_t end) {
        const int64_t n = end - begin;
        if (visit_chunk) visit_chunk(begin / kChunk, begin, end);
        // Run j's values from `begin` on: the stored reference in a per-thread buffer, the targets in place.
        thread_local std::vector<float> stored_chunk;
        std::vector<const float*> at(count, nullptr);
        if (stored) {
          stored_chunk.resize(static_cast<size_t>(n));
          store_span_in_format(ref, begin, end, stored_chunk.data(), stored->format, stored->scale);
          at[0] = stored_chunk.data();
        }
        for (size_t j = first_target; j < count; ++j)
          if (targets[j - first_target]->dtype() == DType::Float32)
            at[j] = targets[j - first_target]->data<float>() + begin;
        Chunks c(count);
        if (vector_kernels)
          fast::divergences(ref.data<float>() + begin, at.data(), static_cast<int>(count), n, params, c.data());
        for (size_t j = 0; j < count; ++j) {
          if (vector_kernels && std::isfinite(c[j].sum_ref_sq + c[j].sum_tgt_sq)) {
            if (hist_of(j)) fast::histogram(at[j], n, c[j].target_hist);
            continue;
          }
          c[j] = Chunk{};  // NaN/Inf in this run's chunk, or not float32 storage: the general code
          auto add_all = [&](auto&& value_at) {
            for_each_value(ref, begin, end, [&](double r, int64_t i) {
              const double x = value_at(i);
              c[j].add(r, x, params);
              if (hist_of(j)) c[j].target_hist.add(x);
            });
          };
          if (at[j]) {
            add_all([&](int64_t i) { return static_cast<double>(at[j][i - begin]); });
          } else {
            visit_float(targets[j - first_target]->dtype(), [&](auto tag) {
              using T = typename decltype(tag)::type;
              const T* t = static_cast<const T*>(targets[j - first_target]->raw());
              add_all([&](int64_t i) { return static_cast<double>(load(t[i])); });
            });
          }
        }
        return c;
      },
      [&](const Chunks& c) {
        for (size_t j = 0; j < count; ++j) {
          out[j].absorb(c[j]);
          if (hist_of(j)) hist_of(j)->absorb(c[j].target_hist);
        }
      });
  for (Divergence& d : out) d.end_sample(sample);
  return out;
}

double Divergence::cosine() const {
  const double rr = sum_ref_sq.value(), tt = sum_tgt_sq.value();
  if (!compared) return std::nan("");
  if (rr == 0 && tt == 0) return 1.0;
  if (rr == 0 || tt == 0) return 0.0;
  return sum_ref_tgt.value() / std::sqrt(rr * tt);
}

double Divergence::sqnr_db() const {
  if (!compared) return std::nan("");
  const double signal = sum_ref_sq.value(), noise = sum_sq_err.value();
  if (noise == 0) return kMaxSqnrDb;
  if (signal == 0) return -kMaxSqnrDb;
  return std::min(kMaxSqnrDb, 10 * std::log10(signal / noise));
}

json Divergence::to_json() const {
  json j;
  j["max_abs_err"] = compared ? json(max_abs) : json(nullptr);
  j["mean_abs_err"] = number_or_null(mean_abs_err());
  j["rmse"] = number_or_null(rmse());
  j["max_rel_err"] = compared ? json(max_rel) : json(nullptr);
  j["cosine"] = number_or_null(cosine());
  j["sqnr_db"] = number_or_null(sqnr_db());
  j["mismatch_frac"] = number_or_null(mismatch_frac());
  j["max_ulp"] = compared ? json(max_ulp) : json(nullptr);
  j["mean_ulp"] = number_or_null(mean_ulp());
  j["nan"] = nan;
  j["inf"] = inf;
  j["worst_sample"] = worst_sample;
  j["state"] = {{"compared", compared},
                {"ref_finite", ref_finite},
                {"mismatches", mismatches},
                {"worst_sample_max_abs", number_or_null(worst_sample_max_abs)},
                {"sum_abs", sum_abs.to_string()},
                {"sum_sq_err", sum_sq_err.to_string()},
                {"sum_ref_sq", sum_ref_sq.to_string()},
                {"sum_tgt_sq", sum_tgt_sq.to_string()},
                {"sum_ref_tgt", sum_ref_tgt.to_string()},
                {"sum_ulp", sum_ulp.to_string()}};
  return j;
}

Divergence Divergence::from_json(const json& j) {
  Divergence d;
  const json& s = j.at("state");
  d.compared = s.at("compared");
  d.ref_finite = s.at("ref_finite");
  d.mismatches = s.at("mismatches");
  d.nan = j.at("nan");
  d.inf = j.at("inf");
  d.max_abs = j.at("max_abs_err").is_null() ? 0 : j.at("max_abs_err").get<double>();
  d.max_rel = j.at("max_rel_err").is_null() ? 0 : j.at("max_rel_err").get<double>();
  d.max_ulp = j.at("max_ulp").is_null() ? 0 : j.at("max_ulp").get<double>();
  d.worst_sample = j.at("worst_sample");
  d.worst_sample_max_abs = s.at("worst_sample_max_abs").is_null() ? INFINITY : s.at("worst_sample_max_abs").get<double>();
  d.sum_abs = ExactSum::parse(s.at("sum_abs"));
  d.sum_sq_err = ExactSum::parse(s.at("sum_sq_err"));
  d.sum_ref_sq = ExactSum::parse(s.at("sum_ref_sq"));
  d.sum_tgt_sq = ExactSum::parse(s.at("sum_tgt_sq"));
  d.sum_ref_tgt = ExactSum::parse(s.at("sum_ref_tgt"));
  d.sum_ulp = ExactSum::parse(s.at("sum_ulp"));
  return d;
}

}  // namespace mpa::probes
