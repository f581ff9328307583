// `mpaudit devices`: every backend of this build with its state, as `--device` names it.
#include <cstdio>

#include "backends/backend.h"
#include "backends/modules.h"
#include "cli/commands.h"

namespace mpa::cli {

Action add_devices(CLI::App&) {
  return [] {
    for (const std::string& family : module_families()) load_backends_of(family);
    for (const Backend* b : backends()) {
      const Support here = b->available();
      std::printf("%-7s %s: %s\n", std::string(b->name()).c_str(), here.ok ? "available" : "unavailable",
                  here.ok ? b->describe().c_str() : here.reason.c_str());
    }
    return 0;
  };
}

}  // namespace mpa::cli
