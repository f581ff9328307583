#include "probes/device_probes.h"

namespace mpa::probes {

std::optional<DeviceFigures> probe_on_device(const Backend& device, const Tensor& ref, bool reference_figures,
                                             const std::vector<kernels::FitBounds>& fits,
                                             const std::vector<const Tensor*>& runs, const Divergence::Params& params,
                                             int64_t sample, const std::vector<ExpHistogram*>& hists) {
  ProbeRequest request;
  request.reference = &ref;
  request.reference_figures = reference_figures;
  request.fits = fits;
  request.runs = runs;
  for (size_t j = 0; j < runs.size(); ++j) request.run_histograms.push_back(j < hists.size() && hists[j]);
  request.params = params;
  request.chunk = kChunk;
  std::optional<ProbeChunks> chunks = device.probe(request);
  if (!chunks) return std::nullopt;
  DeviceFigures out{std::vector<Divergence>(runs.size()), {}};
  for (size_t c = 0; c < chunks->runs.size(); ++c) {
    const size_t j = c % runs.size();
    out.runs[j].absorb(chunks->runs[c]);
    if (request.run_histograms[j]) hists[j]->absorb(chunks->run_hists[c]);
  }
  for (Divergence& d : out.runs) d.end_sample(sample);
  out.chunks = std::move(*chunks);
  return out;
}

RangeProbe fold_range(const ProbeChunks& chunks) {
  RangeProbe range;
  for (const RangeProbe::Chunk& c : chunks.range) range.absorb(c);
  return range;
}

ExpHistogram fold_histogram(const ProbeChunks& chunks) {
  ExpHistogram hist;
  for (const ExpHistogram::Chunk& c : chunks.hist) hist.absorb(c);
  return hist;
}

FormatFit fold_fit(const ProbeChunks& chunks, size_t f, size_t fits) {
  FormatFit fit;
  for (size_t c = f; c < chunks.fits.size(); c += fits) {
    fit.absorb(chunks.fits[c]);
    fit.significant_flush += chunks.fits[c].significant_flush;
  }
  return fit;
}

}  // namespace mpa::probes
