// .npy (format 1.0/2.0/3.0, little-endian, C order) and .npz (zip of .npy, stored or deflated) I/O.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "tensor/tensor.h"

namespace mpa {

Tensor read_npy(const std::filesystem::path& path);
Tensor parse_npy(const std::string& bytes, const std::string& what);
std::string serialize_npy(const Tensor& tensor);
// Writes atomically: a temporary file in the same folder, renamed over the target.
void write_npy(const std::filesystem::path& path, const Tensor& tensor);
// Every array of an .npz, keyed by name without the .npy suffix.
std::map<std::string, Tensor> read_npz(const std::filesystem::path& path);

// Writes bytes to path atomically (temp file + fsync + rename), so readers never see a half-written file.
// A process killed meanwhile can leave only its PATH.tmp.PID beside it.
void write_file_atomic(const std::filesystem::path& path, const std::string& bytes);
// Fails unless path can be written: its folder exists and is writable, and it is not a folder. Checked
// before long work whose result goes there.
void check_can_write(const std::filesystem::path& path);

}  // namespace mpa
