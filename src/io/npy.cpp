#include "io/npy.h"

#include <zip.h>

#include <cstring>
#include <fstream>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/number_text.h"
#include "model/loader.h"

namespace mpa {

namespace fs = std::filesystem;

namespace {

// The text of a key's value in a .npy header dict ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"):
// a quoted string, a word or a parenthesised tuple, up to its end.
std::string header_value(const std::string& header, const std::string& key, const std::string& what) {
  const std::string quoted = "'" + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos) fail(what + ": .npy header has no " + key);
  at += quoted.size();
  while (at < header.size() && std::isspace(static_cast<unsigned char>(header[at]))) ++at;
  if (!(at < header.size() && header[at] == ':')) fail(what + ": .npy header has no " + key);
  ++at;
  while (at < header.size() && std::isspace(static_cast<unsigned char>(header[at]))) ++at;
  if (at >= header.size()) fail(what + ": .npy header has no " + key);
  size_t end = at;
  if (header[at] == '\'') end = header.find('\'', at + 1);
  else if (header[at] == '(') end = header.find(')', at);
  else
    while (end + 1 < header.size() && std::isalnum(static_cast<unsigned char>(header[end + 1]))) ++end;
  if (end == std::string::npos) fail(what + ": .npy header value of " + key + " is not closed");
  return header.substr(at, end - at + 1);
}

struct NpyType {
  const char* descr;
  DType dtype;
};
// '<' little-endian, '|' not applicable (1 byte).
constexpr NpyType kNpyTypes[] = {
    {"<f4", DType::Float32}, {"<f8", DType::Float64}, {"<f2", DType::Float16}, {"|i1", DType::Int8},
    {"<i2", DType::Int16},   {"<i4", DType::Int32},   {"<i8", DType::Int64},   {"|u1", DType::UInt8},
    {"<u2", DType::UInt16},  {"<u4", DType::UInt32},  {"<u8", DType::UInt64},  {"|b1", DType::Bool},
};

std::string descr_of(DType t) {
  for (const auto& e : kNpyTypes)
    if (e.dtype == t) return e.descr;
  // bfloat16 has no numpy dtype: stored as its raw 16 bits.
  if (t == DType::BFloat16) return "<u2";
  fail("cannot write " + dtype_name(t) + " to .npy");
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  if (!(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0)) fail(what + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (!(bytes.size() >= 12)) fail(what + ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    fail(what + ": unsupported .npy format version " + std::to_string(major));
  }
  if (!(header_len <= bytes.size() - offset)) fail(what + ": truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  offset += header_len;

  std::string descr = header_value(header, "descr", what);
  if (!(descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'')) fail(what + ": .npy header has no descr");
  descr = descr.substr(1, descr.size() - 2);
  if (descr == "<b1" || descr == "|b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  DType dtype = DType::Undefined;
  for (const auto& e : kNpyTypes)
    if (descr == e.descr) dtype = e.dtype;
  if (!(dtype != DType::Undefined))
    fail(what + ": unsupported .npy dtype '" + descr + "' (big-endian or non-numeric?)");
  const std::string order = header_value(header, "fortran_order", what);
  if (!(order == "False" || order == "True")) fail(what + ": .npy header has no fortran_order");
  if (!(order == "False")) fail(what + ": Fortran-ordered .npy arrays are not supported; save with C order");
  const std::string dims = header_value(header, "shape", what);
  if (!(dims.size() >= 2 && dims.front() == '(' && dims.back() == ')')) fail(what + ": .npy header has no shape");
  // "(2, 3)", "(5,)", "()": decimal dims separated by commas, a trailing comma allowed.
  Shape shape;
  std::string item;
  const std::string inner = dims.substr(1, dims.size() - 2) + ",";
  for (size_t i = 0; i < inner.size(); ++i) {
    const char ch = inner[i];
    if (ch != ',') {
      item += ch;
      continue;
    }
    const size_t first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (item.empty() && i + 1 == inner.size()) break;  // after a trailing comma, or an empty tuple
    const std::optional<int64_t> dim = parse_count(item);
    if (!(dim.has_value())) fail(what + ": bad .npy shape '" + dims + "'");
    shape.push_back(*dim);
    item.clear();
  }
  const int64_t numel = shape_numel(shape);
  const size_t elem = dtype_size(dtype);
  if (!(static_cast<uint64_t>(numel) <= (bytes.size() - offset) / elem))
    fail(what + ": .npy data is shorter than shape " + shape_str(shape) + " of " + dtype_name(dtype) + " needs");
  if (!(static_cast<size_t>(numel) * elem == bytes.size() - offset))
    fail(what + ": .npy data is longer than shape " + shape_str(shape) + " of " + dtype_name(dtype) + " needs");
  Tensor t(dtype, shape);
  if (t.nbytes()) std::memcpy(t.raw(), bytes.data() + offset, t.nbytes());
  return t;
}

Tensor read_npy(const fs::path& path) { return parse_npy(read_file_bytes(path, uint64_t{16} << 30), path.string()); }

std::string serialize_npy(const Tensor& tensor) {
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i) shape += std::to_string(tensor.shape()[i]) + ", ";
  if (tensor.shape().size() > 1) shape.resize(shape.size() - 2);
  else if (tensor.shape().size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + descr_of(tensor.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>((header.size() >> 8) & 0xFF);
  out += header;
  out.append(static_cast<const char*>(tensor.raw()), tensor.nbytes());
  return out;
}

void check_can_write(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  // A device or FIFO is written in place (write_file_atomic): its folder need not be writable.
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status)) return;
  if (!(fs::is_directory(folder, ec))) fail(path.string() + ": folder '" + folder.string() + "' does not exist");
  if (!(::access(folder.c_str(), W_OK) == 0)) fail(path.string() + ": folder '" + folder.string() + "' is not writable");
  if (fs::is_directory(path, ec)) fail(path.string() + ": is a folder");
}

namespace {

// Writes all of bytes to fd; false (errno set) when a write fails.
bool write_all(int fd, const std::string& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomic(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status)) {
    // A device, FIFO or terminal (/dev/stdout): written in place; renaming a file over it would replace it.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (!(fd >= 0)) fail(path.string() + ": cannot open for writing: " + std::strerror(errno));
    const bool complete = write_all(fd, bytes);
    const int write_errno = errno;
    ::close(fd);
    if (!complete) fail(path.string() + ": write failed: " + std::strerror(write_errno));
    return;
  }
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (!(fd >= 0)) fail(path.string() + ": cannot open for writing: " + std::strerror(errno));
  // On disk before the rename: a crash right after it must not leave an empty file under the name.
  const bool complete = write_all(fd, bytes) && ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  if (!complete) {
    fs::remove(tmp, ec);
    fail(path.string() + ": write failed: " + std::strerror(write_errno));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail(path.string() + ": cannot replace file: " + ec.message());
  }
}

void write_npy(const fs::path& path, const Tensor& tensor) { write_file_atomic(path, serialize_npy(tensor)); }

std::map<std::string, Tensor> read_npz(const fs::path& path) {
  const std::string what = path.string();
  if (!(fs::is_regular_file(path))) fail(what + ": no such file");
  int error = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (!(archive != nullptr)) fail(what + ": not a valid .npz (zip) archive");
  std::map<std::string, Tensor> out;
  try {
    const zip_int64_t entries = zip_get_num_entries(archive, 0);
    for (zip_int64_t i = 0; i < entries; ++i) {
      zip_stat_t st;
      if (!(zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &st) == 0)) fail(what + ": unreadable entry");
      std::string name = st.name;
      if (!(st.size < (uint64_t{16} << 30))) fail(what + ": entry '" + name + "' is too large");
      // The header's size is read before any data, so a lying one must not decide an allocation: deflate
      // expands at most 1032-fold, a stored entry not at all, and the compressed bytes lie in the file.
      const uint64_t archive_bytes = fs::file_size(path);
      const bool sizes_known = (st.valid & ZIP_STAT_SIZE) && (st.valid & ZIP_STAT_COMP_SIZE) && (st.valid & ZIP_STAT_COMP_METHOD);
      if (!(sizes_known && st.comp_size <= archive_bytes &&
            (st.comp_method == ZIP_CM_STORE ? st.size == st.comp_size : st.size <= st.comp_size * 1032 + 1024)))
        fail(what + ": entry '" + name + "' claims " + std::to_string(st.size) + " bytes, more than its " +
             std::to_string(st.comp_size) + " stored bytes can hold");
      zip_file_t* file = zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0);
      if (!(file != nullptr)) fail(what + ": cannot open entry '" + name + "'");
      std::string bytes(static_cast<size_t>(st.size), '\0');
      const zip_int64_t got = zip_fread(file, bytes.data(), st.size);
      zip_fclose(file);
      if (!(got == static_cast<zip_int64_t>(st.size))) fail(what + ": truncated entry '" + name + "'");
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
      out[name] = parse_npy(bytes, what + "[" + name + "]");
    }
  } catch (...) {
    zip_discard(archive);
    throw;
  }
  zip_discard(archive);
  return out;
}

}  // namespace mpa
