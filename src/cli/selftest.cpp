// `mpaudit selftest --device cuda`: every kernel of a device backend against the CPU (src/selftest). Exit 0
// when every case is within its tolerance, 1 when one is not, 2 (one line) when the device cannot be used.
#include "selftest/selftest.h"

#include <iostream>
#include <memory>

#include "backends/backend.h"
#include "cli/commands.h"

namespace mpa::cli {

Action add_selftest(CLI::App& app) {
  struct Options {
    std::string device = "cuda", op;
    bool coverage = false;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("--device", opt->device, "the device backend to check against the CPU (default: cuda)");
  app.add_option("--op", opt->op, "only the ops whose type matches this regular expression");
  app.add_flag("--coverage", opt->coverage, "also list the device's kernels that no case covers");
  return [opt] {
    const Backend& device = backend_named(opt->device);
    if (&device == &host_backend()) fail("selftest compares a device with the CPU: name a device (--device cuda)");
    std::cout << "selftest of " << device.name() << ": " << device.describe() << "\n";
    const selftest::Summary summary = selftest::run(device, opt->op, std::cout);
    if (opt->coverage)
      for (const std::string& op : selftest::uncovered_ops(device)) std::cout << "no case: " << op << "\n";
    std::cout << "selftest: " << summary.passed << " passed, " << summary.failed << " failed, " << summary.not_supported
              << " not supported\n";
    return summary.failed ? 1 : 0;
  };
}

}  // namespace mpa::cli
