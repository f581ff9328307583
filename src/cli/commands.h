// mpaudit subcommands. Each registers its options on the CLI11 app and returns the action to run.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace mpa::cli {

using Action = std::function<int()>;

Action add_inspect(CLI::App& app);
Action add_run(CLI::App& app);
Action add_audit(CLI::App& app);
Action add_fix(CLI::App& app);
Action add_merge(CLI::App& app);
Action add_diff(CLI::App& app);
Action add_html(CLI::App& app);
Action add_devices(CLI::App& app);
Action add_tensors(CLI::App& app);
Action add_selftest(CLI::App& app);
#ifdef MPA_HAVE_UI
Action add_view(CLI::App& app);
#endif

}  // namespace mpa::cli
