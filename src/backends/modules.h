// Backends built as shared libraries (../shared/docs/backends.md §7, "Loading"): the CUDA backend lives in
// libmpaudit_backend_cuda.so, loaded only when a command asks for it (`--device cuda`, `mpaudit devices`,
// `selftest`), so that mpaudit starts, and runs on the CPU, on a machine with no NVIDIA driver or CUDA
// libraries. A module is looked for in $MPA_BACKEND_PATH (folders separated by ':'), then in
// <mpaudit's folder>/../lib/mpaudit and in mpaudit's own folder.
//
// A module exports three C functions: mpa_backend_api_version() (kBackendApiVersion), mpa_backend_build()
// (the mpaudit version and compiler it was built with: the interface is C++, so both must match) and
// mpa_backend_register(), which adds its backends with add_backend(). Modules are never unloaded: CUDA's
// libraries do not survive it (ONNX Runtime keeps its CUDA provider loaded for the same reason).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mpa {

inline constexpr int kBackendApiVersion = 2;

// What a module and mpaudit must agree on besides the API version: mpaudit's version and the (host)
// compiler, compiled into each side (inline), so a module built by another build says so.
inline std::string backend_build_id() {
  return std::string("mpaudit ") + MPA_VERSION + ", gcc " + std::to_string(__GNUC__) + "." +
         std::to_string(__GNUC_MINOR__) + "." + std::to_string(__GNUC_PATCHLEVEL__);
}

// The backend families that come as modules ("cuda").
const std::vector<std::string>& module_families();

// Loads the module of `family` once (the module adds its backends with add_backend). The first call gives
// the reason it could not, in one line (not found and where it was looked for, a library it needs is
// missing, a version mismatch); later calls give none.
std::optional<std::string> load_backend_module(const std::string& family);

// The files tried for `family`, in order.
std::vector<std::string> module_candidates(const std::string& family);

}  // namespace mpa
