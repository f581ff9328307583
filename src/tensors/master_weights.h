// Whether updates survive being added to low-precision weights (why training keeps FP32 master weights):
// for weights W and an update dW (given, or -lr * gradient), an element's update vanishes in a format when
// round(W + dW) == round(W), the sum taken in float32 as an optimizer step computes it. Counted over the
// elements with a finite weight and a finite nonzero update.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "probes/exp_histogram.h"
#include "tensor/formats.h"
#include "tensor/tensor.h"

namespace mpa::tensors {

inline constexpr Format kMasterWeightFormats[] = {Format::FP16, Format::BF16};

// `--master 'W_GLOB=U_GLOB'`: each tensor matching W_GLOB is a weight; its update is named by U_GLOB with
// the text its `*` matched (one `*` on each side), e.g. 'weight/*=update/*'.
struct MasterPairing {
  std::string weight_pattern, update_pattern;
  static MasterPairing parse(const std::string& text);
  // The update's name for a weight named `name`, or nothing when `name` is not a weight.
  std::optional<std::string> update_for(const std::string& name) const;
  // Whether `name` is the update side of some weight.
  bool is_update(const std::string& name) const;
};

struct VanishingUpdates {
  int64_t elements = 0;
  int64_t nonfinite = 0;          // elements whose weight or update is NaN/Inf (left out)
  int64_t updated = 0;            // finite weight, finite nonzero update
  int64_t zero_weight = 0;        // of those, with W == 0 (no ratio)
  std::vector<int64_t> vanished;  // per kMasterWeightFormats entry, of `updated`
  probes::ExpHistogram ratio;     // |dW| / |W| of the updated elements with W != 0
};

// `update` is dW, or a gradient when `learning_rate` is given (dW = float32(-lr) * g). Both tensors are
// floating with equal shapes; `what` names them in errors.
VanishingUpdates vanishing_updates(const Tensor& weight, const Tensor& update, std::optional<double> learning_rate,
                                   const std::string& what);

}  // namespace mpa::tensors
