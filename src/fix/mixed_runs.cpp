#include "fix/mixed_runs.h"

#include <algorithm>

#include "runtime/precision.h"

namespace mpa::fix {

MixedRuns::MixedRuns(std::shared_ptr<const Graph> graph, const SampleSource& samples, int64_t first, int64_t last,
                     const AuditOptions& options)
    : graph_(graph),
      samples_(samples),
      first_(first),
      last_(last),
      session_(graph, session_options(options)),
      params_(storage_format(options.targets.at(0)), options.thresholds.tolerances) {
  require(options.targets.size() == 1, "fix searches one target format at a time");
  require(!options.fp8_absmax_scaling, "fix does not search FP8 keep-sets under --fp8-scaling absmax yet");
  reference_config_ = config_for(options.reference, Accumulation::FP32, RuntimeProfile::Generic, options.threads);
  fp32_config_ = session_.default_config();
  target_config_ = config_for(options.targets[0], options.accumulation, options.profile, options.threads);
  for (const ValueInfo& out : graph->outputs)
    if (out.elem_type == 0 || dtype_is_float(static_cast<DType>(out.elem_type))) outputs_.push_back(out.name);
}

void MixedRuns::run_reference() {
  StreamPlan reference;
  reference.node_config.assign(graph_->nodes.size(), reference_config_);
  for (int64_t s = first_; s < last_; ++s) {
    feeds_.push_back(samples_.sample(s));
    reference_.push_back(std::move(session_.run_streams(feeds_.back(), {reference}).at(0)));
  }
}

std::vector<OutputFigures> MixedRuns::run(const std::vector<std::string>& keep) {
  if (!reference_ran()) run_reference();
  StreamPlan plan;
  for (const Node& node : graph_->nodes) {
    const bool kept = std::find(keep.begin(), keep.end(), node.name) != keep.end();
    plan.node_config.push_back(kept ? fp32_config_ : target_config_);
    plan.computes_in_format.push_back(!kept);
  }
  std::vector<OutputFigures> figures;
  for (const std::string& name : outputs_) figures.push_back(OutputFigures{name, {}, 0, 0});
  for (size_t s = 0; s < feeds_.size(); ++s) {
    const TensorMap got = session_.run_streams(feeds_[s], {plan}).at(0);
    for (OutputFigures& f : figures) {
      const Tensor& want = reference_[s].at(f.name);
      // An output declared without a type that turns out integer has nothing a gate measures.
      if (dtype_is_float(want.dtype())) f.add(want, got.at(f.name), params_, static_cast<int64_t>(s));
    }
  }
  ++runs_;
  return figures;
}

}  // namespace mpa::fix
