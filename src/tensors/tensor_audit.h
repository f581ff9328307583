// `mpaudit tensors` end to end, without the terminal: find the steps and their tensors, read each tensor
// once (one in memory at a time; a weight and its update together), analyse it for every target format,
// then the loss scale over the gradients and the vanishing updates of each weight/update pair.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tensors/loss_scale.h"
#include "tensors/master_weights.h"
#include "tensors/tensor_files.h"
#include "tensors/tensor_stats.h"

namespace mpa::tensors {

struct TensorAuditOptions {
  std::vector<std::string> paths;
  std::vector<Format> targets{Format::FP16, Format::BF16, Format::FP8E4M3FN, Format::FP8E5M2};
  double max_flush_fraction = 1e-3;
  // Globs (fnmatch) naming the gradients; none: every floating tensor that is not a weight or an update.
  std::vector<std::string> gradient_patterns;
  std::vector<MasterPairing> master;
  std::optional<double> learning_rate;  // given: the update side of --master holds gradients
  LossScaleOptions loss_scale;
};

enum class TensorRole { Gradient, Weight, Update, Other };
const char* role_name(TensorRole role);

struct TensorRecord {
  std::string name, source;
  TensorRole role = TensorRole::Other;
  TensorStats stats;  // without its magnitudes (folded into the step's gradients where it is one)
};

struct StepRecord {
  std::string name;
  std::vector<TensorRecord> tensors;
};

struct MasterRecord {
  std::string step, weight, update;
  VanishingUpdates figures;
};

struct TensorAudit {
  TensorAuditOptions options;
  std::vector<StepRecord> steps;
  int64_t gradient_count = 0;
  StaticScale static_scale;
  DynamicScale dynamic_scale;
  std::vector<MasterRecord> master;
};

// `progress(done, total)` after each tensor read.
TensorAudit run_tensor_audit(const TensorAuditOptions& options,
                             const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace mpa::tensors
