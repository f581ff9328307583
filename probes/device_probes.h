// The probes' figures of tensors on a device that computes them (Backend::probe): one request, and the
// per-chunk statistics it returns folded in chunk order as the host's probes fold theirs, so that only
// those statistics leave the device. Counts, extremes and histograms equal the host's; sums differ in
// their last bits (summation order).
#pragma once
#include <optional>
#include <vector>

#include "backends/backend.h"
#include "probes/divergence.h"
#include "probes/exp_histogram.h"
#include "probes/format_fit.h"
#include "probes/range_probe.h"

namespace mpa::probes {

struct DeviceFigures {
  std::vector<Divergence> runs;  // per run, one sample's
  ProbeChunks chunks;            // the reference's own figures per chunk (when asked for), for the caller to fold
};

// The divergence of each run from `ref` in one sample (`hists[j]`, when given and not null, takes run j's
// exponent histogram), and with `reference_figures` the reference's range and histogram chunks and its
// fit to each of `fits`; none where `device` does not compute this request (the host must).
std::optional<DeviceFigures> probe_on_device(const Backend& device, const Tensor& ref, bool reference_figures,
                                             const std::vector<kernels::FitBounds>& fits,
                                             const std::vector<const Tensor*>& runs, const Divergence::Params& params,
                                             int64_t sample, const std::vector<ExpHistogram*>& hists = {});

// Folds of a request's reference chunks: its range, histogram and fit to format f.
RangeProbe fold_range(const ProbeChunks& chunks);
ExpHistogram fold_histogram(const ProbeChunks& chunks);
FormatFit fold_fit(const ProbeChunks& chunks, size_t f, size_t fits);

}  // namespace mpa::probes
