#include "tensors/master_weights.h"

#include "tensor/dispatch.h"

namespace mpa::tensors {

namespace {

// The text around a pattern's one `*`.
std::pair<std::string, std::string> split_at_star(const std::string& pattern, const std::string& option) {
  const size_t star = pattern.find('*');
  if (!(star != std::string::npos && pattern.find('*', star + 1) == std::string::npos))
    fail("--master '" + option + "': each side needs exactly one '*', e.g. 'weight/*=update/*'");
  return {pattern.substr(0, star), pattern.substr(star + 1)};
}

// The text `pattern`'s `*` matches in `name`, or nothing.
std::optional<std::string> star_match(const std::string& pattern, const std::string& name) {
  const size_t star = pattern.find('*');
  const std::string prefix = pattern.substr(0, star), suffix = pattern.substr(star + 1);
  if (name.size() < prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
}

}  // namespace

MasterPairing MasterPairing::parse(const std::string& text) {
  const size_t equals = text.find('=');
  if (!(equals != std::string::npos))
    fail("--master '" + text + "': expected WEIGHTS=UPDATES, e.g. 'weight/*=update/*'");
  MasterPairing pairing{text.substr(0, equals), text.substr(equals + 1)};
  split_at_star(pairing.weight_pattern, text);
  split_at_star(pairing.update_pattern, text);
  return pairing;
}

std::optional<std::string> MasterPairing::update_for(const std::string& name) const {
  const auto middle = star_match(weight_pattern, name);
  if (!middle) return std::nullopt;
  const size_t star = update_pattern.find('*');
  return update_pattern.substr(0, star) + *middle + update_pattern.substr(star + 1);
}

bool MasterPairing::is_update(const std::string& name) const { return star_match(update_pattern, name).has_value(); }

VanishingUpdates vanishing_updates(const Tensor& weight, const Tensor& update, std::optional<double> learning_rate,
                                   const std::string& what) {
  require(dtype_is_float(weight.dtype()) && dtype_is_float(update.dtype()),
          what + ": weights and updates must be floating tensors, not " + dtype_name(weight.dtype()) + " and " +
              dtype_name(update.dtype()));
  require(weight.shape() == update.shape(), what + ": the weight's shape " + shape_str(weight.shape()) +
                                                " differs from its update's " + shape_str(update.shape()));
  VanishingUpdates out;
  out.elements = weight.numel();
  out.vanished.assign(std::size(kMasterWeightFormats), 0);
  const float step_factor = learning_rate ? static_cast<float>(-*learning_rate) : 1.0f;
  visit_float(weight.dtype(), [&](auto weight_tag) {
    visit_float(update.dtype(), [&](auto update_tag) {
      using W = typename decltype(weight_tag)::type;
      using U = typename decltype(update_tag)::type;
      const W* w = static_cast<const W*>(weight.raw());
      const U* u = static_cast<const U*>(update.raw());
      for (int64_t i = 0; i < out.elements; ++i) {
        const float wi = static_cast<float>(load(w[i]));
        const float di = learning_rate ? step_factor * static_cast<float>(load(u[i])) : static_cast<float>(load(u[i]));
        if (!std::isfinite(wi) || !std::isfinite(di)) {
          ++out.nonfinite;
          continue;
        }
        if (di == 0) continue;
        ++out.updated;
        const float sum = wi + di;
        for (size_t k = 0; k < std::size(kMasterWeightFormats); ++k)
          out.vanished[k] +=
              round_to_format(kMasterWeightFormats[k], sum) == round_to_format(kMasterWeightFormats[k], wi);
        if (wi == 0)
          ++out.zero_weight;
        else
          ++out.ratio.counts[static_cast<size_t>(
              probes::ExpHistogram::bin_of(std::fabs(static_cast<double>(di)) / std::fabs(static_cast<double>(wi))))];
      }
    });
  });
  return out;
}

}  // namespace mpa::tensors
