// `mpaudit selftest --device NAME`: every kernel of a device backend against the CPU backend, in the style of
// ggml's test-backend-ops (../shared/docs/backends.md §8). Each case is a one-node graph run by the real
// executor (format storage, host inputs, placement) twice, on the CPU and on the device, under every
// precision setting (fp32, fp16, bf16, tf32, fp8e4m3, and fp16 with fp16 accumulation for GEMMs), and the
// outputs are compared by the tolerance the op's precision class allows (OpTraits::precision):
//   exact, elementwise: bit-equal (the device runs the same functors, IEEE-rounded, with no FMA contraction);
//   transcendental: within a few ulps of the storage format (device libm against the host's);
//   accumulating: normalised mean squared error within a per-format bound (summation order, library
//     algorithms: cuBLAS and cuDNN choose their own).
// Non-finite values must sit at the same places (NaN where the CPU has NaN, Inf of the same sign).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace mpa::selftest {

struct Outcome {
  std::string op, shape, format;
  enum class Result { Ok, Fail, NotSupported } result = Result::Ok;
  std::string metric;  // "nmse 3.1e-09 (limit 1e-07)", "max 1 ulp (limit 2)", or why not supported / failed
};

struct Summary {
  int passed = 0, failed = 0, not_supported = 0;
};

// Runs every case whose op matches `op_filter` (a regular expression; empty: all) on `device` against the
// CPU, printing one line per case and format to `out`; the caller has checked the device is available.
Summary run(const Backend& device, const std::string& op_filter, std::ostream& out);

// Ops that have a kernel in `device`'s table but no selftest case (--coverage).
std::vector<std::string> uncovered_ops(const Backend& device);

}  // namespace mpa::selftest
