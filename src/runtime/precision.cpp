#include "runtime/precision.h"

#include <algorithm>
#include <cmath>


namespace mpa {

ExecConfig config_for(Format format, Accumulation accumulation, RuntimeProfile profile, int threads) {
  ExecConfig c;
  c.threads = threads;
  c.storage = storage_format(format);
  c.tf32_gemm_inputs = format == Format::TF32;
  c.accumulation = accumulation;
  c.profile = profile;
  return c;
}

Format format_of(const ExecConfig& config) {
  return config.storage == Format::FP32 && config.tf32_gemm_inputs ? Format::TF32 : config.storage;
}

double absmax_scale(Format format, double absmax) {
  if (!(absmax > 0)) return 1;
  // A float (storage divides by it in float), the smallest one that keeps absmax / scale within the
  // format: the largest value then lands on the format's max, never beyond it by a rounding of the quotient.
  const float max_finite = static_cast<float>(format_traits(format).max_finite), largest = static_cast<float>(absmax);
  float scale = static_cast<float>(absmax / max_finite);
  if (!(std::isfinite(largest) && std::isfinite(scale) && scale > 0)) return absmax / max_finite;  // beyond float
  while (largest / scale > max_finite) scale = std::nextafter(scale, INFINITY);
  return scale;
}

}  // namespace mpa
