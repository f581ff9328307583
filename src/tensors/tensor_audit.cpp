#include "tensors/tensor_audit.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>

namespace mpa::tensors {

namespace {

TensorRole role_of(const std::string& name, bool floating, const TensorAuditOptions& options) {
  if (!floating) return TensorRole::Other;
  const bool updates_are_gradients = options.learning_rate.has_value();
  for (const MasterPairing& pairing : options.master) {
    if (pairing.update_for(name)) return TensorRole::Weight;
    if (pairing.is_update(name) && !updates_are_gradients) return TensorRole::Update;
  }
  if (options.gradient_patterns.empty()) return TensorRole::Gradient;
  for (const std::string& pattern : options.gradient_patterns)
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return TensorRole::Gradient;
  return TensorRole::Other;
}

// Reads one tensor; errors name it (the readers name the file, and the member where there is one).
Tensor read_named(TensorReader& reader, const TensorSource& source) {
  return naming_file(source.describe(), [&] { return reader.read(source); });
}

void pair_master_weights(const Step& step, const TensorAuditOptions& options, TensorReader& reader,
                         std::vector<MasterRecord>& out) {
  std::map<std::string, const TensorSource*> by_name;
  for (const TensorSource& source : step.tensors) by_name[source.name] = &source;
  for (const TensorSource& source : step.tensors)
    for (const MasterPairing& pairing : options.master) {
      const auto update_name = pairing.update_for(source.name);
      if (!update_name) continue;
      const auto update = by_name.find(*update_name);
      if (update == by_name.end())
        fail(source.describe() + ": weight '" + source.name + "' of step '" + step.name + "' has no " +
             (options.learning_rate ? "gradient" : "update") + " '" + *update_name + "' (--master " +
             pairing.weight_pattern + "=" + pairing.update_pattern + ")");
      const Tensor weight = read_named(reader, source);
      const Tensor delta = read_named(reader, *update->second);
      out.push_back({step.name, source.name, *update_name,
                     vanishing_updates(weight, delta, options.learning_rate,
                                       source.describe() + " and " + update->second->describe())});
      break;
    }
}

}  // namespace

const char* role_name(TensorRole role) {
  switch (role) {
    case TensorRole::Gradient: return "gradient";
    case TensorRole::Weight: return "weight";
    case TensorRole::Update: return "update";
    case TensorRole::Other: return "other";
  }
  return "other";
}

TensorAudit run_tensor_audit(const TensorAuditOptions& options, const std::function<void(int64_t, int64_t)>& progress) {
  require(options.max_flush_fraction >= 0 && options.max_flush_fraction <= 1, "--max-flush must lie in [0, 1]");
  require(!options.targets.empty(), "no target format");
  TensorAudit audit;
  audit.options = options;
  const std::vector<Step> steps = find_steps(options.paths);
  int64_t total = 0, done = 0;
  for (const Step& step : steps) total += static_cast<int64_t>(step.tensors.size());
  std::vector<StepGradients> gradients;
  TensorReader reader;
  for (const Step& step : steps) {
    StepRecord record{step.name, {}};
    StepGradients step_gradients{step.name, {}, {}};
    for (const TensorSource& source : step.tensors) {
      TensorStats stats = analyse_tensor(read_named(reader, source), options.targets, options.max_flush_fraction);
      const TensorRole role = role_of(source.name, stats.floating, options);
      if (role == TensorRole::Gradient) {
        step_gradients.gradients.push_back({source.name, stats.range.absmax(), stats.nonfinite(),
                                            scale_window(stats.magnitudes, stats.range.absmax(), stats.nonfinite(),
                                                         options.loss_scale.format, options.max_flush_fraction)});
        step_gradients.magnitudes.merge(stats.magnitudes);
        ++audit.gradient_count;
      }
      stats.magnitudes = {};
      record.tensors.push_back({source.name, source.describe(), role, std::move(stats)});
      if (progress) progress(++done, total);
    }
    pair_master_weights(step, options, reader, audit.master);
    audit.steps.push_back(std::move(record));
    gradients.push_back(std::move(step_gradients));
  }
  if (audit.gradient_count > 0) {
    audit.static_scale = recommend_static_scale(gradients, options.loss_scale);
    audit.dynamic_scale = simulate_dynamic_scale(gradients, options.loss_scale);
  }
  return audit;
}

}  // namespace mpa::tensors
