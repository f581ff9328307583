#include "io/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "common/memory_budget.h"
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
  // Narrow types have no numpy dtype either (ml_dtypes' are not in the format): a byte per element as
  // held in memory, float codes as uint8, int4/int2 sign-extended as int8, uint4/uint2 as uint8 (numpy
  // reads them back with .view(ml_dtypes.float8_e4m3fn) or .astype(ml_dtypes.int4)).
  if (dtype_is_narrow(t)) return t == DType::Int4 || t == DType::Int2 ? "|i1" : "|u1";
  fail("cannot write " + dtype_name(t) + " to .npy");
}

}  // namespace

NpyLayout read_npy_layout(const ByteReader& read, const std::string& what) {
  std::string preamble(10, '\0');
  if (!(read(preamble.data(), 10) == 10 && preamble.compare(0, 6, "\x93NUMPY") == 0))
    fail(what + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(preamble[6]);
  size_t header_len = 0;
  if (major == 1) {
    header_len =
        static_cast<unsigned char>(preamble[8]) | (static_cast<size_t>(static_cast<unsigned char>(preamble[9])) << 8);
  } else if (major == 2 || major == 3) {
    preamble.resize(12);
    if (!(read(preamble.data() + 10, 2) == 2)) fail(what + ": truncated .npy header");
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(preamble[8 + i])) << (8 * i);
  } else {
    fail(what + ": unsupported .npy format version " + std::to_string(major));
  }
  // numpy writes headers of a few hundred bytes; a larger claim is a corrupt file, not a reason to allocate.
  if (!(header_len <= (size_t{1} << 20))) fail(what + ": .npy header claims " + std::to_string(header_len) + " bytes");
  std::string header(header_len, '\0');
  if (!(read(header.data(), header_len) == header_len)) fail(what + ": truncated .npy header");

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
  shape_numel(shape);  // fails on a product beyond 2^62 before anyone multiplies it by the element size
  return {dtype, std::move(shape), preamble.size() + header_len};
}

Tensor read_npy_data(const NpyLayout& layout, uint64_t data_bytes, const ByteReader& read, const std::string& what) {
  const uint64_t numel = static_cast<uint64_t>(shape_numel(layout.shape));
  const uint64_t elem = dtype_size(layout.dtype);
  const std::string declared = "shape " + shape_str(layout.shape) + " of " + dtype_name(layout.dtype);
  if (!(numel <= data_bytes / elem)) fail(what + ": .npy data is shorter than " + declared + " needs");
  if (!(numel * elem == data_bytes)) fail(what + ": .npy data is longer than " + declared + " needs");
  memory_budget::require(what + ": its " + declared, data_bytes);
  Tensor t(layout.dtype, layout.shape);
  if (!(read(static_cast<char*>(t.raw()), t.nbytes()) == t.nbytes()))
    fail(what + ": .npy data is shorter than " + declared + " needs");
  return t;
}

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  size_t at = 0;
  const ByteReader read = [&](char* out, size_t n) {
    const size_t got = std::min(n, bytes.size() - at);
    std::memcpy(out, bytes.data() + at, got);
    at += got;
    return got;
  };
  const NpyLayout layout = read_npy_layout(read, what);
  return read_npy_data(layout, bytes.size() - layout.data_offset, read, what);
}

Tensor read_npy(const fs::path& path) {
  const std::string what = path.string();
  const uintmax_t size = checked_file_size(path, std::numeric_limits<uint64_t>::max());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(what + ": cannot open for reading");
  const ByteReader read = [&](char* out, size_t n) {
    in.read(out, static_cast<std::streamsize>(n));
    return static_cast<size_t>(in.gcount());
  };
  const NpyLayout layout = read_npy_layout(read, what);
  return read_npy_data(layout, size - layout.data_offset, read, what);
}

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

// The temporary file being written, removed by a signal that ends the process meanwhile. One at a time:
// the CLI writes its files one after another.
char g_pending_temporary[4096] = {};

// Only async-signal-safe calls: unlink, write, _exit.
void end_on_signal(int signal_number) {
  if (g_pending_temporary[0] != '\0') ::unlink(g_pending_temporary);
  const char* message = signal_number == SIGINT    ? "mpaudit: interrupted (SIGINT); nothing half-written is left\n"
                        : signal_number == SIGTERM ? "mpaudit: terminated (SIGTERM); nothing half-written is left\n"
                        : signal_number == SIGHUP  ? "mpaudit: hung up (SIGHUP); nothing half-written is left\n"
                                                   : "mpaudit: file size limit exceeded (SIGXFSZ); nothing half-written is left\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, message, std::strlen(message));
  ::_exit(128 + signal_number);
}

class PendingTemporary {
 public:
  explicit PendingTemporary(const std::string& name) {
    end_cleanly_on_signals();
    if (name.size() < sizeof g_pending_temporary) std::memcpy(g_pending_temporary, name.c_str(), name.size() + 1);
  }
  ~PendingTemporary() { g_pending_temporary[0] = '\0'; }
  PendingTemporary(const PendingTemporary&) = delete;
  PendingTemporary& operator=(const PendingTemporary&) = delete;
};

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

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

void end_cleanly_on_signals() {
  static const bool installed = [] {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGXFSZ}) {
      struct sigaction action = {};
      action.sa_handler = end_on_signal;
      sigemptyset(&action.sa_mask);
      ::sigaction(s, &action, nullptr);
    }
    return true;
  }();
  (void)installed;
}

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
  // A fresh name no one can plant a link at beforehand (mkstemp: O_EXCL, random suffix), readable as the
  // report itself would be once renamed.
  std::string tmp_name = path.string() + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp_name.data(), O_CLOEXEC);
  if (!(fd >= 0)) fail(path.string() + ": cannot open for writing: " + std::strerror(errno));
  const fs::path tmp = tmp_name;
  const PendingTemporary pending(tmp_name);
  ::fchmod(fd, 0644 & ~current_umask());
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
    const std::string why = ec.message();  // before the clean-up below sets ec again
    fs::remove(tmp, ec);
    fail(path.string() + ": cannot replace file: " + why);
  }
}

void write_npy(const fs::path& path, const Tensor& tensor) { write_file_atomic(path, serialize_npy(tensor)); }

namespace {

// An .npz archive open for reading, closed on every path out.
class NpzArchive {
 public:
  explicit NpzArchive(const fs::path& path) : what_(path.string()) {
    if (!(fs::is_regular_file(path))) fail(what_ + ": no such file");
    archive_bytes_ = fs::file_size(path);
    int error = 0;
    archive_ = zip_open(path.c_str(), ZIP_RDONLY, &error);
    if (!(archive_ != nullptr)) fail(what_ + ": not a valid .npz (zip) archive");
  }
  ~NpzArchive() { zip_discard(archive_); }
  NpzArchive(const NpzArchive&) = delete;
  NpzArchive& operator=(const NpzArchive&) = delete;

  zip_uint64_t entries() const {
    return static_cast<zip_uint64_t>(std::max<zip_int64_t>(0, zip_get_num_entries(archive_, 0)));
  }

  // The array name of entry i: its file name without the .npy suffix.
  std::string name(zip_uint64_t index) const {
    const char* entry = zip_get_name(archive_, index, 0);
    if (!(entry != nullptr)) fail(what_ + ": unreadable entry");
    std::string name = entry;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    return name;
  }

  std::optional<zip_uint64_t> find(const std::string& array_name) const {
    for (const std::string& entry : {array_name + ".npy", array_name}) {
      const zip_int64_t index = zip_name_locate(archive_, entry.c_str(), 0);
      if (index >= 0) return static_cast<zip_uint64_t>(index);
    }
    return std::nullopt;
  }

  // Straight from the archive into the tensor: one array in memory, never its bytes twice.
  Tensor read(zip_uint64_t index) const {
    const std::string entry_what = what_ + "[" + name(index) + "]";
    zip_stat_t st;
    if (!(zip_stat_index(archive_, index, 0, &st) == 0)) fail(entry_what + ": unreadable entry");
    // The header's size is read before any data, so a lying one must not decide an allocation: deflate
    // expands at most 1032-fold, a stored entry not at all, and the compressed bytes lie in the file.
    const bool sizes_known =
        (st.valid & ZIP_STAT_SIZE) && (st.valid & ZIP_STAT_COMP_SIZE) && (st.valid & ZIP_STAT_COMP_METHOD);
    if (!(sizes_known && st.comp_size <= archive_bytes_ &&
          (st.comp_method == ZIP_CM_STORE ? st.size == st.comp_size : st.size <= st.comp_size * 1032 + 1024)))
      fail(entry_what + ": entry claims " + std::to_string(st.size) + " bytes, more than its " +
           std::to_string(st.comp_size) + " stored bytes can hold");
    zip_file_t* file = zip_fopen_index(archive_, index, 0);
    if (!(file != nullptr)) fail(entry_what + ": cannot open entry");
    const ByteReader read = [&](char* out, size_t n) {
      const zip_int64_t got = zip_fread(file, out, n);
      return got > 0 ? static_cast<size_t>(got) : size_t{0};
    };
    try {
      const NpyLayout layout = read_npy_layout(read, entry_what);
      Tensor tensor =
          read_npy_data(layout, st.size - std::min<uint64_t>(st.size, layout.data_offset), read, entry_what);
      zip_fclose(file);
      return tensor;
    } catch (...) {
      zip_fclose(file);
      throw;
    }
  }

 private:
  std::string what_;
  uint64_t archive_bytes_ = 0;
  zip_t* archive_ = nullptr;
};

}  // namespace

void for_each_npz_array(const fs::path& path, const std::function<void(const std::string&, Tensor)>& visit) {
  const NpzArchive archive(path);
  for (zip_uint64_t i = 0; i < archive.entries(); ++i) visit(archive.name(i), archive.read(i));
}

std::vector<std::string> npz_array_names(const fs::path& path) {
  const NpzArchive archive(path);
  std::vector<std::string> names;
  for (zip_uint64_t i = 0; i < archive.entries(); ++i) names.push_back(archive.name(i));
  return names;
}

Tensor read_npz_array(const fs::path& path, const std::string& name) {
  const NpzArchive archive(path);
  const std::optional<zip_uint64_t> index = archive.find(name);
  if (!(index.has_value())) fail(path.string() + "[" + name + "]: no such array in the archive");
  return archive.read(*index);
}

std::map<std::string, Tensor> read_npz(const fs::path& path) {
  std::map<std::string, Tensor> out;
  for_each_npz_array(path, [&](const std::string& name, Tensor tensor) { out[name] = std::move(tensor); });
  return out;
}

}  // namespace mpa
