// mpaudit: mixed-precision audit for ONNX models. Exit codes: 0 success, 1 a gate failed, 2 error.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <optional>

#include "backends/cpu/gemm.h"
#include "cli/arg_groups.h"
#include "cli/commands.h"
#include "common/error.h"
#include "io/npy.h"

namespace {

// One line whatever the message holds: names from a model may carry newlines or other control bytes.
std::string one_line(const std::string& message) {
  std::string line;
  for (unsigned char c : message) {
    if (c >= 0x20 && c != 0x7F) {
      line += static_cast<char>(c);
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, c == '\n' ? "\\n" : "\\x%02x", c);
    line += escaped;
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS reads OPENBLAS_CORETYPE only when it loads, before main (a setting made in .preinit_array is
  // undone by libc's own start): restart once with the CPU's vector kernels when OpenBLAS fell back to generic
  // ones. execv returns only on failure, and then the defaults still work. (mpaudit's threads are its own pool,
  // common/parallel.h, not OpenMP's: OMP_WAIT_POLICY and GOMP_SPINCOUNT do not concern them.)
  if (const auto kernels = mpa::cpu::blas_kernels_to_force()) {
    setenv("OPENBLAS_CORETYPE", kernels->c_str(), 1);
    execv("/proc/self/exe", argv);
  }
  mpa::end_cleanly_on_signals();
  CLI::App app{"mpaudit: find the layers of an ONNX model that break in low precision"};
  app.set_version_flag("--version", std::string("mpaudit ") + MPA_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, mpa::cli::Action>> commands;
  auto add = [&](const char* name, const char* help, mpa::cli::Action (*make)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    mpa::cli::add_memory_option(*sub);
    commands.emplace_back(sub, make(*sub));
  };
  add("inspect", "Show a model's opsets, inputs/outputs, op histogram, parameters and unsupported ops", mpa::cli::add_inspect);
  add("run", "Run a model in FP32 and save or summarise its outputs", mpa::cli::add_run);
  add("audit", "Run a model in FP32 and in low precision side by side and name the layers that break",
      mpa::cli::add_audit);
  add("fix", "Find the smallest verified set of nodes to keep in FP32 and export it for deployment tools",
      mpa::cli::add_fix);
  add("merge", "Join audit reports of the same model made on different samples or machines", mpa::cli::add_merge);
  add("diff", "Say what changed between two audit reports (e.g. main's and a pull request's)", mpa::cli::add_diff);
  add("html", "Write a report as one self-contained HTML page that opens offline", mpa::cli::add_html);
  add("devices", "List the backends that can run a model (--device) and their state", mpa::cli::add_devices);
  add("selftest", "Check every kernel of a device (--device cuda) against the CPU, op by op and format by format",
      mpa::cli::add_selftest);
  add("tensors", "Audit dumped tensors and gradients against fp16/bf16/fp8, find the safe loss scale",
      mpa::cli::add_tensors);
#ifdef MPA_HAVE_UI
  add("view", "Show a report in the dashboard, or save it as a PNG with --screenshot", mpa::cli::add_view);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mpaudit: error: " << one_line(e.what()) << " (see mpaudit --help)\n";
    return 2;
  }
  // Declared before the commands run and destroyed when main returns, before static destructors.
  std::optional<mpa::cpu::GemmWarmUp> gemm_warm_up;
  try {
    for (auto& [sub, action] : commands) {
      if (!sub->parsed()) continue;
      for (const char* runs_models : {"run", "audit", "fix", "view", "selftest"})
        if (sub->get_name() == runs_models) gemm_warm_up.emplace();
      return action();
    }
  } catch (const mpa::Error& e) {
    std::cerr << "mpaudit: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "mpaudit: error: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mpaudit: internal error: " << one_line(e.what()) << "\n";
    return 2;
  }
  return 2;
}
