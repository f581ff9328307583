// What the fuzz targets share. An mpa::Error (UnsupportedType included) out of an entry point is bad input
// refused as designed; anything else (another exception type, a crash, a sanitizer report, a timeout, an
// allocation past -malloc_limit_mb) ends the process and is what libFuzzer reports.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/memory_budget.h"
#include "model/graph.h"

namespace mpa::fuzz {

// The memory budget the CLI applies (--max-memory), set below libFuzzer's -malloc_limit_mb: a size the budget
// checks is refused with an Error, as on the command line; one it misses still trips libFuzzer's limit.
inline const bool budget_set = [] {
  memory_budget::set_limit(int64_t{1} << 30);
  return true;
}();

inline std::string as_string(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

template <class F>
void refusing_bad_input(F&& entry_point) {
  try {
    entry_point();
  } catch (const Error&) {
  }
}

// A file or folder of the fuzz process, removed when it ends normally (libFuzzer's time limit included).
struct TemporaryPath {
  std::filesystem::path path;
  explicit TemporaryPath(const std::string& name, const std::string& extension = "")
      : path(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()) + extension)) {}
  ~TemporaryPath() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// For entry points that read a file by path as the CLI calls them (libzip opens .npz files by name): one file
// per process in the temporary folder, rewritten with every input.
inline std::filesystem::path input_file(const std::string& bytes, const std::string& extension) {
  static const TemporaryPath file("mpaudit-fuzz-input", extension);
  std::ofstream(file.path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return file.path;
}

// A graph input as a model declares it (elem_type: the ONNX type id); without dims it declares no shape.
inline ValueInfo declared_input(const std::string& name, int32_t elem_type, std::optional<Shape> dims = {}) {
  ValueInfo info;
  info.name = name;
  info.elem_type = elem_type;
  info.has_shape = dims.has_value();
  if (dims) info.dims = *dims, info.dim_params.assign(dims->size(), "");
  return info;
}

}  // namespace mpa::fuzz
