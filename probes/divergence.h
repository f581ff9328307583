// Divergence of a target-format run from the reference, element by element:
//   max_abs_err, mean_abs_err, rmse, max_rel_err = max |t-r| / max(|r|, rel_floor), cosine,
//   sqnr_db = 10 log10(sum r^2 / sum (t-r)^2), mismatch_frac = share of |t-r| > atol + rtol |r|,
//   max_ulp / mean_ulp = |t-r| in units of the target format's spacing at |r|,
//   nan / inf = NaN or Inf in the target where the reference is finite.
// Error figures are over elements where both runs are finite. sqnr_db is capped at kMaxSqnrDb
// (an exact match); figures with no element to measure are null in JSON.
#pragma once
#include <functional>

#include "probes/exp_histogram.h"
#include "probes/probe_common.h"
#include "tensor/formats.h"

namespace mpa::probes {

struct Tolerances {
  double atol = 1e-3, rtol = 1e-2;
  // Relative errors divide by max(|ref|, rel_floor); 0 means the target format's smallest normal,
  // below which the format cannot hold a relative precision anyway.
  double rel_floor = 0;
};

struct Divergence {
  static constexpr double kMaxSqnrDb = 400;
  // FP8 per-tensor scale (kernels::DivergenceParams::scale): the grid is the format's times the scale, so
  // ulps are measured at |r| / scale (in float, as storage divides) and the default relative floor moves
  // with it. The vector kernels serve unscaled runs only.
  struct Params : kernels::DivergenceParams {
    bool format_floor;
    Params(Format f, const Tolerances& t)
        : kernels::DivergenceParams{t.atol, t.rtol, t.rel_floor > 0 ? t.rel_floor : format_traits(f).min_normal,
                                    std::ilogb(format_traits(f).min_normal), format_traits(f).mantissa_bits},
          format_floor(!(t.rel_floor > 0)) {}
    Params scaled_by(double s) const {
      Params p = *this;
      p.scale = static_cast<float>(s);
      if (format_floor) p.rel_floor *= p.scale;
      return p;
    }
  };
  struct Chunk : kernels::DivergenceChunk {
    ExpHistogram::Chunk target_hist;
  };

  int64_t compared = 0, ref_finite = 0, nan = 0, inf = 0, mismatches = 0;
  double max_abs = 0, max_rel = 0, max_ulp = 0;
  ExactSum sum_abs, sum_sq_err, sum_ref_sq, sum_tgt_sq, sum_ref_tgt, sum_ulp;
  // The sample with the largest max_abs_err (lowest index on ties), -1 before any sample.
  int64_t worst_sample = -1;
  double worst_sample_max_abs = -1;

  void absorb(const kernels::DivergenceChunk& c);
  // Closes one sample's figures (absorbed chunk by chunk): the sample is its own worst so far.
  void end_sample(int64_t sample) {
    worst_sample = sample;
    worst_sample_max_abs = nonfinite() ? INFINITY : max_abs;
  }
  void merge(const Divergence& other);
  template <class Counts> void add_counts(const Counts& counts);
  // Observes one sample's reference/target pair (same shape) in one pass.
  // When target_hist is given, the target values' exponent histogram is taken in the same pass.
  static Divergence of(const Tensor& ref, const Tensor& tgt, const Params& params, int64_t sample,
                       ExpHistogram* target_hist = nullptr);
  // The same for several targets of one reference (runs of the same node in different streams), in one
  // pass over the reference; target_hists[j] (when given and not null) takes targets[j]'s histogram.
  static std::vector<Divergence> of_each(const Tensor& ref, const std::vector<const Tensor*>& targets,
                                         const Params& params, int64_t sample,
                                         const std::vector<ExpHistogram*>& target_hists = {});
  // The reference merely stored in a format (what its consumers' isolated runs read), as tensor_in_format
  // stores it (store_span_in_format): float32, rounded onto the format's grid through `scale`.
  struct StoredReference {
    Format format;
    double scale = 1;
  };
  // Called for each chunk [begin, end) of the reference (chunk = begin / kChunk), on the thread that
  // measures it and just before, so that other probes of the reference read the chunk while it is in cache.
  using ChunkVisitor = std::function<void(int64_t chunk, int64_t begin, int64_t end)>;
  // of_each with the stored reference as the first target, made chunk by chunk while the reference chunk
  // is in cache instead of read from a copy of the whole tensor: returns [stored, targets...].
  static std::vector<Divergence> of_stored_and_each(const Tensor& ref, const StoredReference& stored,
                                                    const std::vector<const Tensor*>& targets, const Params& params,
                                                    int64_t sample,
                                                    const std::vector<ExpHistogram*>& target_hists = {},
                                                    const ChunkVisitor& visit_chunk = {});

  double mean_abs_err() const { return compared ? sum_abs.value() / static_cast<double>(compared) : std::nan(""); }
  double rmse() const { return compared ? std::sqrt(sum_sq_err.value() / static_cast<double>(compared)) : std::nan(""); }
  double cosine() const;
  double sqnr_db() const;
  double mismatch_frac() const { return compared ? static_cast<double>(mismatches) / static_cast<double>(compared) : std::nan(""); }
  double mean_ulp() const { return compared ? sum_ulp.value() / static_cast<double>(compared) : std::nan(""); }
  int64_t nonfinite() const { return nan + inf; }
  json to_json() const;
  static Divergence from_json(const json& j);

 private:
  static std::vector<Divergence> of_runs(const Tensor& ref, const StoredReference* stored,
                                         const std::vector<const Tensor*>& targets, const Params& params,
                                         int64_t sample, const std::vector<ExpHistogram*>& target_hists,
                                         const ChunkVisitor& visit_chunk);
};

}  // namespace mpa::probes
