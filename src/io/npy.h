// .npy (format 1.0/2.0/3.0, little-endian, C order) and .npz (zip of .npy, stored or deflated) I/O.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mpa {

Tensor read_npy(const std::filesystem::path& path);
// Reads up to n bytes into out and returns how many it read (fewer only at the end of the source).
using ByteReader = std::function<size_t(char* out, size_t n)>;
// What a .npy header declares; the array's bytes start data_offset bytes into the file.
struct NpyLayout {
  DType dtype = DType::Undefined;
  Shape shape;
  size_t data_offset = 0;
};
// Reads the magic, version and header dict, leaving `read` at the first data byte. Fails naming `what`.
NpyLayout read_npy_layout(const ByteReader& read, const std::string& what);
// Reads the array of `layout` whose source holds data_bytes more bytes: the size is checked against the
// shape before anything is allocated, so a header that declares a huge shape fails instead.
Tensor read_npy_data(const NpyLayout& layout, uint64_t data_bytes, const ByteReader& read, const std::string& what);
Tensor parse_npy(const std::string& bytes, const std::string& what);
std::string serialize_npy(const Tensor& tensor);
// Writes atomically: a temporary file in the same folder, renamed over the target.
void write_npy(const std::filesystem::path& path, const Tensor& tensor);
// Every array of an .npz, keyed by name without the .npy suffix.
std::map<std::string, Tensor> read_npz(const std::filesystem::path& path);
// The arrays of an .npz in archive order, one in memory at a time (errors name the file and array).
void for_each_npz_array(const std::filesystem::path& path,
                        const std::function<void(const std::string& name, Tensor tensor)>& visit);
// The array names of an .npz in archive order, without reading any array.
std::vector<std::string> npz_array_names(const std::filesystem::path& path);
// One array of an .npz by name.
Tensor read_npz_array(const std::filesystem::path& path, const std::string& name);

// Makes SIGINT, SIGTERM, SIGHUP and SIGXFSZ end the process with one line on stderr and exit code 128 + the
// signal's number (130, 143, 129, 153), removing first the temporary file of a write_file_atomic under
// way. The CLI calls it at start; write_file_atomic calls it too. Idempotent.
void end_cleanly_on_signals();
// Writes bytes to path atomically (a fresh temporary file beside it, fsync, rename), so readers never see a
// half-written file; a signal meanwhile removes the temporary file (end_cleanly_on_signals). Only a process
// killed outright (SIGKILL) can leave its PATH.tmp.XXXXXX beside it.
void write_file_atomic(const std::filesystem::path& path, const std::string& bytes);
// Fails unless path can be written: its folder exists and is writable, and it is not a folder. Checked
// before long work whose result goes there.
void check_can_write(const std::filesystem::path& path);

}  // namespace mpa
