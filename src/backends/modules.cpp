#include "backends/modules.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

namespace mpa {

namespace {

std::string executable_folder() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.parent_path().string();
}

// Loads one module file; the reason it cannot be used, or "" when it registered its backends.
std::string load_module_file(const std::string& path) {
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const char* error = dlerror();
    return "cannot load " + path + ": " + (error ? error : "unknown error");
  }
  using VersionFn = int (*)();
  using BuildFn = const char* (*)();
  using RegisterFn = void (*)();
  const auto version = reinterpret_cast<VersionFn>(dlsym(module, "mpa_backend_api_version"));
  const auto build = reinterpret_cast<BuildFn>(dlsym(module, "mpa_backend_build"));
  const auto register_backends = reinterpret_cast<RegisterFn>(dlsym(module, "mpa_backend_register"));
  if (!version || !build || !register_backends)
    return path + " is not an mpaudit backend module (entry points missing)";
  if (version() != kBackendApiVersion)
    return path + " speaks backend API " + std::to_string(version()) + ", this mpaudit " +
           std::to_string(kBackendApiVersion);
  if (build() != backend_build_id())
    return path + " was built for '" + build() + "', this mpaudit is '" + backend_build_id() + "'";
  register_backends();
  return {};
}

}  // namespace

const std::vector<std::string>& module_families() {
  static const std::vector<std::string> families = {"cuda"};
  return families;
}

std::vector<std::string> module_candidates(const std::string& family) {
  const std::string file = "libmpaudit_backend_" + family + ".so";
  std::vector<std::string> folders;
  if (const char* path = std::getenv("MPA_BACKEND_PATH")) {
    std::string list = path;
    for (size_t start = 0; start <= list.size();) {
      const size_t end = std::min(list.find(':', start), list.size());
      if (end > start) folders.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  if (const std::string exe = executable_folder(); !exe.empty()) {
    folders.push_back(exe + "/../lib/mpaudit");
    folders.push_back(exe);
  }
  std::vector<std::string> files;
  for (const std::string& folder : folders) files.push_back(folder + "/" + file);
  return files;
}

std::optional<std::string> load_backend_module(const std::string& family) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<std::string>> outcome;  // per family: loaded once
  std::lock_guard<std::mutex> lock(mutex);
  if (auto known = outcome.find(family); known != outcome.end()) return std::nullopt;  // reported the first time
  std::string reason, searched;
  for (const std::string& candidate : module_candidates(family)) {
    std::error_code error;
    if (!std::filesystem::exists(candidate, error)) {
      searched += (searched.empty() ? "" : ", ") + candidate;
      continue;
    }
    reason = load_module_file(candidate);
    if (reason.empty()) return outcome[family] = std::nullopt;
    break;
  }
  if (reason.empty())
    reason = "module libmpaudit_backend_" + family + ".so not found (looked for " +
             (searched.empty() ? std::string("it nowhere: no folder to search") : searched) + ")";
  return outcome[family] = reason;
}

}  // namespace mpa
