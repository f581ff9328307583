#include "tensors/tensor_files.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "io/npy.h"
#include "model/loader.h"

namespace mpa::tensors {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxFileBytes = uint64_t{64} << 30;
// safetensors headers are JSON of a few kilobytes per hundred tensors; the format caps them at 100 MB.
constexpr uint64_t kMaxSafetensorsHeader = uint64_t{100} << 20;

std::string lower_extension(const fs::path& file) {
  std::string extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

// [SECTION] safetensors: 8 bytes of little-endian header length, a JSON header
// {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}, then the data,
// offsets counted from its start.

struct SafetensorsType {
  const char* name;
  DType dtype;
};
constexpr SafetensorsType kSafetensorsTypes[] = {
    {"F64", DType::Float64}, {"F32", DType::Float32}, {"F16", DType::Float16}, {"BF16", DType::BFloat16},
    {"I64", DType::Int64},   {"I32", DType::Int32},   {"I16", DType::Int16},   {"I8", DType::Int8},
    {"U64", DType::UInt64},  {"U32", DType::UInt32},  {"U16", DType::UInt16},  {"U8", DType::UInt8},
    {"BOOL", DType::Bool},
};

struct SafetensorsEntry {
  DType dtype = DType::Undefined;
  Shape shape;
  uint64_t begin = 0, end = 0;  // file offsets of the data
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const fs::path& path) : path_(path), in_(path, std::ios::binary) {
    const std::string what = path.string();
    const uint64_t size = checked_file_size(path, kMaxFileBytes);
    if (!in_) fail(what + ": cannot open for reading");
    unsigned char length_bytes[8] = {};
    in_.read(reinterpret_cast<char*>(length_bytes), 8);
    if (in_.gcount() != 8) fail(what + ": truncated .safetensors file (no header length)");
    uint64_t header_length = 0;
    for (int i = 0; i < 8; ++i) header_length |= uint64_t{length_bytes[i]} << (8 * i);
    if (!(header_length <= size - 8 && header_length <= kMaxSafetensorsHeader))
      fail(what + ": .safetensors header claims " + std::to_string(header_length) + " bytes, more than the file's " +
           std::to_string(size) + " bytes can hold");
    std::string text(static_cast<size_t>(header_length), '\0');
    in_.read(text.data(), static_cast<std::streamsize>(header_length));
    header_ = nlohmann::ordered_json::parse(text, nullptr, false);
    if (header_.is_discarded() || !header_.is_object()) fail(what + ": .safetensors header is not a JSON object");
    data_start_ = 8 + header_length;
    data_bytes_ = size - data_start_;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [key, value] : header_.items())
      if (key != "__metadata__") out.push_back(key);
    return out;
  }

  SafetensorsEntry entry(const std::string& name) const {
    const std::string what = path_.string() + "[" + name + "]";
    if (!(header_.contains(name) && name != "__metadata__")) fail(what + ": no such tensor in the file");
    const auto& e = header_.at(name);
    if (!(e.is_object() && e.contains("dtype") && e["dtype"].is_string() && e.contains("shape") &&
          e["shape"].is_array() && e.contains("data_offsets") && e["data_offsets"].is_array() &&
          e["data_offsets"].size() == 2))
      fail(what + ": header entry needs dtype, shape and data_offsets [begin, end]");
    SafetensorsEntry out;
    const std::string dtype = e["dtype"];
    for (const auto& t : kSafetensorsTypes)
      if (dtype == t.name) out.dtype = t.dtype;
    if (out.dtype == DType::Undefined) fail(what + ": unsupported dtype '" + dtype + "'");
    for (const auto& dim : e["shape"]) {
      if (!(dim.is_number_unsigned())) fail(what + ": shape holds something other than a count");
      out.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(dim.get<uint64_t>(), uint64_t{1} << 62)));
    }
    for (const auto& offset : e["data_offsets"])
      if (!(offset.is_number_unsigned())) fail(what + ": data_offsets must be counts");
    const uint64_t begin = e["data_offsets"][0], end = e["data_offsets"][1];
    if (!(begin <= end && end <= data_bytes_))
      fail(what + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
           "] lie outside the file's " + std::to_string(data_bytes_) + " data bytes");
    const uint64_t numel = static_cast<uint64_t>(shape_numel(out.shape));
    if (!(numel <= (end - begin) / dtype_size(out.dtype) && numel * dtype_size(out.dtype) == end - begin))
      fail(what + ": shape " + shape_str(out.shape) + " of " + dtype + " needs " + std::to_string(numel) +
           " elements, " + "data_offsets hold " + std::to_string(end - begin) + " bytes");
    out.begin = data_start_ + begin;
    out.end = data_start_ + end;
    return out;
  }

  Tensor read(const std::string& name) {
    const SafetensorsEntry e = entry(name);
    Tensor t(e.dtype, e.shape);
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(e.begin));
    in_.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
    if (!(static_cast<uint64_t>(in_.gcount()) == t.nbytes()))
      fail(path_.string() + "[" + name + "]: short read of its data");
    return t;
  }

 private:
  fs::path path_;
  std::ifstream in_;
  nlohmann::ordered_json header_;
  uint64_t data_start_ = 0, data_bytes_ = 0;
};

// [SECTION] ONNX TensorProto: parsed from the stream, its raw_data taken over by the tensor (no second copy).
Tensor read_tensor_pb(const fs::path& path) {
  const std::string what = path.string();
  checked_file_size(path, kMaxFileBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(what + ": cannot open for reading");
  onnx::TensorProto proto;
  if (!(proto.ParseFromIstream(&in))) fail(what + ": not a serialized ONNX TensorProto");
  const std::string tensor_what = proto.name().empty() ? what : what + "[" + proto.name() + "]";
  return tensor_from_proto(std::move(proto), path.parent_path(), tensor_what);
}

bool holds_tensor_files(const fs::path& folder) {
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && is_tensor_file(entry.path())) return true;
  return false;
}

std::vector<fs::path> sorted_entries(const fs::path& folder, bool folders) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(folder))
    if (folders ? entry.is_directory() : (entry.is_regular_file() && is_tensor_file(entry.path())))
      out.push_back(entry.path());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    return natural_less(a.filename().string(), b.filename().string());
  });
  return out;
}

Step step_of_files(std::string name, const std::vector<fs::path>& files) {
  Step step{std::move(name), {}};
  std::map<std::string, std::string> seen;  // tensor name -> where it was found first
  for (const fs::path& file : files)
    for (TensorSource& source : list_tensors(file)) {
      const auto [at, added] = seen.emplace(source.name, source.describe());
      if (!added)
        fail(source.describe() + ": a second tensor named '" + source.name + "' in step '" + step.name +
             "' (the first is " + at->second + ")");
      step.tensors.push_back(std::move(source));
    }
  return step;
}

}  // namespace

std::string TensorSource::describe() const {
  return member.empty() ? file.string() : file.string() + "[" + member + "]";
}

bool is_tensor_file(const fs::path& file) {
  const std::string extension = lower_extension(file);
  return extension == ".npy" || extension == ".npz" || extension == ".pb" || extension == ".safetensors";
}

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
      while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
      // Numbers compare by value: without leading zeros, the longer is larger, else digit by digit.
      std::string_view x(a.data() + i, i_end - i), y(b.data() + j, j_end - j);
      x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
      y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

std::vector<TensorSource> list_tensors(const fs::path& file) {
  const std::string extension = lower_extension(file);
  std::vector<TensorSource> out;
  if (extension == ".npz") {
    for (const std::string& name : npz_array_names(file)) out.push_back({name, file, name});
  } else if (extension == ".safetensors") {
    for (const std::string& name : SafetensorsFile(file).names()) out.push_back({name, file, name});
  } else if (extension == ".npy" || extension == ".pb") {
    out.push_back({file.stem().string(), file, ""});
  } else {
    fail(file.string() + ": not a tensor file (.npy, .npz, .pb or .safetensors)");
  }
  return out;
}

struct TensorReader::OpenSafetensors {
  fs::path path;
  SafetensorsFile file;
};

TensorReader::TensorReader() = default;
TensorReader::~TensorReader() = default;

Tensor TensorReader::read(const TensorSource& source) {
  const std::string extension = lower_extension(source.file);
  if (extension == ".npz") return read_npz_array(source.file, source.member);
  if (extension == ".pb") {
    // ONNX's narrow types (float8, float4, int4, int2) are what a dump is audited against, not what
    // training keeps its tensors in: read as codes, they would be measured as integers.
    Tensor t = read_tensor_pb(source.file);
    if (dtype_is_narrow(t.dtype()))
      fail(source.file.string() + ": element type " + dtype_name(t.dtype()) +
           ": mpaudit tensors reads float32, float16, bfloat16, float64 and integer tensors");
    return t;
  }
  if (extension != ".safetensors") return read_npy(source.file);
  if (!open_ || open_->path != source.file) {
    open_.reset();  // closes the previous file first
    open_ = std::make_unique<OpenSafetensors>(OpenSafetensors{source.file, SafetensorsFile(source.file)});
  }
  return open_->file.read(source.member);
}

std::vector<Step> find_steps(const std::vector<std::string>& paths) {
  require(!paths.empty(), "no tensor files or folders given");
  std::vector<Step> steps;
  std::vector<fs::path> loose_files;
  size_t loose_files_at = 0;  // where the step of loose files goes among the folders' steps
  for (const std::string& text : paths) {
    const fs::path path(text);
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) fail(text + ": no such file or folder");
    if (!fs::is_directory(status)) {
      if (!is_tensor_file(path)) fail(text + ": not a tensor file (.npy, .npz, .pb or .safetensors)");
      if (loose_files.empty()) loose_files_at = steps.size();
      loose_files.push_back(path);
      continue;
    }
    const std::vector<fs::path> subfolders = sorted_entries(path, true);
    std::vector<fs::path> step_folders;
    for (const fs::path& folder : subfolders)
      if (holds_tensor_files(folder)) step_folders.push_back(folder);
    if (!step_folders.empty() && holds_tensor_files(path))
      fail(text + ": holds both tensor files and step folders; give the step folders or the files");
    if (step_folders.empty()) {
      if (!holds_tensor_files(path)) fail(text + ": no tensor files (.npy, .npz, .pb, .safetensors) in this folder");
      const fs::path name = path.filename().empty() ? path.parent_path().filename() : path.filename();
      steps.push_back(step_of_files(name.string(), sorted_entries(path, false)));
    }
    for (const fs::path& folder : step_folders)
      steps.push_back(step_of_files(folder.filename().string(), sorted_entries(folder, false)));
  }
  if (!loose_files.empty())
    steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(loose_files_at), step_of_files("files", loose_files));
  return steps;
}

}  // namespace mpa::tensors
