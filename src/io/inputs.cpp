#include "io/inputs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

#include "common/memory_budget.h"
#include "common/number_text.h"
#include "io/image.h"
#include "io/npy.h"
#include "io/wav.h"
#include "model/loader.h"
#include "tensor/dispatch.h"

namespace mpa {

namespace fs = std::filesystem;

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& spec, const std::string& option) {
  const size_t eq = spec.find('=');
  if (!(eq != std::string::npos && eq > 0 && eq + 1 < spec.size()))
    fail(option + " '" + spec + "': expected NAME=VALUE");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Tensor read_tensor_file(const std::string& file) { return ends_with(file, ".pb") ? load_tensor_pb(file) : read_npy(file); }

std::string lower_extension(const std::string& file) {
  std::string ext = fs::path(file).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

bool is_image_extension(const std::string& ext) { return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp"; }

constexpr uint64_t kMaxMediaBytes = uint64_t{1} << 31;

// What a file holds, told by its first bytes ("" when none of the kinds below): the readers go by the
// extension, the image decoder by the content, so a file whose content another extension names is refused.
std::string content_kind(const std::string& bytes) {
  const auto starts = [&](const char* magic, size_t at = 0) {
    return bytes.compare(at, std::strlen(magic), magic) == 0;
  };
  if (const std::string image = image_format_of(bytes); !image.empty()) return "a " + image + " image";
  if (starts("\x93NUMPY")) return "a NumPy array (.npy)";
  if (starts("RIFF") && starts("WAVE", 8)) return "a WAV file";
  if (starts("PK\x03\x04")) return "a zip archive (.npz?)";
  return "";
}

// The kind an extension promises, in content_kind()'s words ("" for extensions without a signature: .pb).
std::string extension_kind(const std::string& ext) {
  if (ext == ".npy") return "a NumPy array (.npy)";
  if (ext == ".jpg" || ext == ".jpeg") return "a JPEG image";
  if (ext == ".png") return "a PNG image";
  if (ext == ".bmp") return "a BMP image";
  if (ext == ".wav") return "a WAV file";
  return "";
}

// The first bytes of a file that is read by a streaming reader (.npy), enough for content_kind().
std::string file_head(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char head[12] = {};
  in.read(head, sizeof head);
  return std::string(head, static_cast<size_t>(in.gcount()));
}

// `bytes`: the file's content, or at least its first 12 bytes.
void require_content_matches(const std::string& bytes, const std::string& ext, const std::string& what) {
  const std::string promised = extension_kind(ext);
  if (promised.empty()) return;
  const std::string found = content_kind(bytes);
  if (!(found.empty() || found == promised))
    fail(what + ": the file holds " + found + ", not " + promised + " as its extension '" + ext + "' says");
}

// A number for a scalar input (shape [] or [1]), in the declared element type. nullopt when the text is no
// number at all (then it is taken for a file name); fails when it is a number that does not fit.
std::optional<Tensor> parse_scalar_input(const ValueInfo& info, const std::string& text, const std::string& what) {
  const DType dtype = info.elem_type == 0 ? DType::Float32 : static_cast<DType>(info.elem_type);
  const bool boolean_word = text == "true" || text == "false";
  char* end = nullptr;
  const double as_double = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? 0 : std::strtod(text.c_str(), &end);
  const bool numeric = end == text.c_str() + text.size() && !text.empty();
  if (!numeric && !boolean_word) return std::nullopt;
  if (!(dtype_is_supported(info.elem_type == 0 ? 1 : info.elem_type) && !dtype_is_narrow(dtype)))
    fail(what + ": the model declares " + onnx_type_name(info.elem_type) + ", which a number cannot fill");
  Shape shape;
  if (info.has_shape && !info.dims.empty()) {
    if (!(info.dims.size() == 1 && (info.dims[0] == 1 || info.dims[0] < 0)))
      fail(what + ": a number fills a scalar input (shape [] or [1]); the model declares " + declared_shape_str(info));
    shape = {1};
  }
  Tensor t(dtype, shape);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* out = t.data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      if (!(boolean_word || text == "0" || text == "1"))
        fail(what + ": the model declares bool: expected true, false, 1 or 0");
      out[0] = text == "true" || text == "1";
    } else {
      if (!(!boolean_word)) fail(what + ": the model declares " + dtype_name(dtype) + ", not bool");
      if constexpr (std::is_floating_point_v<C>) {
        out[0] = store<T>(static_cast<C>(as_double));
      } else {
        // Integers are parsed as integers, so int64 values beyond 2^53 stay exact.
        errno = 0;
        char* int_end = nullptr;
        const bool negative = text[0] == '-';
        const long long s = negative ? std::strtoll(text.c_str(), &int_end, 10) : 0;
        const unsigned long long u = negative ? 0 : std::strtoull(text.c_str(), &int_end, 10);
        if (!(int_end == text.c_str() + text.size()))
          fail(what + ": the model declares " + dtype_name(dtype) + ": expected an integer");
        const bool fits = errno == 0 && (negative ? std::is_signed_v<T> && s >= static_cast<long long>(std::numeric_limits<T>::min())
                                                  : u <= static_cast<unsigned long long>(std::numeric_limits<T>::max()));
        if (!(fits)) fail(what + ": " + text + " does not fit " + dtype_name(dtype));
        out[0] = negative ? static_cast<T>(s) : static_cast<T>(u);
      }
    }
  });
  return t;
}

// Seeded values that are the same on every platform: a SplitMix64 stream, Box-Muller for normals.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace

Tensor read_input_value(const ValueInfo& declared, const std::string& text, const Preprocess* preprocess) {
  const std::string what = "input '" + declared.name + "' (" + text + ")";
  try {
    const std::string ext = lower_extension(text);
    const bool media = is_image_extension(ext) || ext == ".wav";
    if (!(media || preprocess == nullptr))
      fail("input '" + declared.name +
           "': --preprocess applies to images (.jpg, .jpeg, .png, .bmp) and .wav files, not to '" + text + "'");
    if (ext == ".npy") require_content_matches(file_head(text), ext, what);
    if (ext == ".npy" || ext == ".pb") return read_tensor_file(text);
    if (media) {
      const std::string bytes = read_file_bytes(text, kMaxMediaBytes);
      require_content_matches(bytes, ext, what);
      const Preprocess none;
      const Preprocess& options = preprocess ? *preprocess : none;
      return ext == ".wav" ? audio_input(bytes, declared, options, what) : image_input(bytes, declared, options, what);
    }
    if (auto scalar = parse_scalar_input(declared, text, what)) return *scalar;
    std::error_code ec;
    if (!(!fs::exists(text, ec)))
      fail(what + ": unsupported file type '" + ext + "' (expected .npy, .pb, .jpg, .jpeg, .png, .bmp or .wav)");
    fail(what + ": neither a number nor a file ending in .npy, .pb, .jpg, .jpeg, .png, .bmp or .wav");
  } catch (const UnsupportedType&) {
    throw;
  } catch (const Error& e) {
    // Messages from the file readers name the file; say which input it was for.
    const std::string message = e.what();
    if (message.rfind("input '" + declared.name + "'", 0) == 0) throw;
    throw Error("input '" + declared.name + "': " + message);
  }
}

Shape parse_shape(const std::string& text, const std::string& what) {
  Shape shape;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = text.find_first_of("x,", pos);
    const std::string part = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    try {
      size_t used = 0;
      const long long d = std::stoll(part, &used);
      require(used == part.size() && d >= 0, "");
      shape.push_back(d);
    } catch (const std::exception&) {
      fail(what + ": bad shape '" + text + "' (expected e.g. 1x3x224x224)");
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return shape;
}

SampleSource::SampleSource(const Graph& graph, InputOptions options) : graph_(graph), options_(std::move(options)) {
  std::map<std::string, const ValueInfo*> declared;
  for (const ValueInfo& in : graph.inputs) declared[in.name] = &in;
  auto check_name = [&](const std::string& name, const std::string& source) {
    if (!(declared.count(name) || graph.initializers.count(name)))
      fail(source + ": '" + name + "' is not an input of the model");
  };
  if (!options_.inputs.empty()) {
    if (fs::is_directory(options_.inputs)) {
      for (const auto& entry : fs::directory_iterator(options_.inputs))
        if (entry.is_directory()) sample_dirs_.push_back(entry.path().string());
      std::sort(sample_dirs_.begin(), sample_dirs_.end());
      if (!(!sample_dirs_.empty())) fail(options_.inputs + ": no sample subfolders (expected one folder per sample)");
    } else {
      for (auto& [name, tensor] : read_npz(options_.inputs)) {
        check_name(name, options_.inputs);
        fixed_[name] = std::move(tensor);
        sources_[name] = options_.inputs;
      }
    }
  }
  std::map<std::string, Preprocess> preprocess;
  for (const std::string& spec : options_.preprocess) {
    // The last colon splits: TensorFlow input names carry one ("input_1:0").
    const size_t colon = spec.rfind(':');
    if (!(colon != std::string::npos && colon > 0))
      fail("--preprocess '" + spec + "': expected NAME:KEY=VALUE,... (e.g. image:resize=224x224,scale=1/255)");
    const std::string name = spec.substr(0, colon);
    check_name(name, "--preprocess " + spec);
    if (!(!preprocess.count(name)))
      fail("--preprocess " + name + ": given twice (put its options in one, comma-separated)");
    preprocess[name] = parse_preprocess(spec.substr(colon + 1), "--preprocess " + name);
  }
  std::set<std::string> given;  // by --input (which may override an .npz entry, but not itself)
  for (const std::string& spec : options_.files) {
    const auto [name, text] = split_assignment(spec, "--input");
    check_name(name, "--input " + spec);
    if (!given.insert(name).second) fail("--input " + name + ": given twice");
    ValueInfo info;
    if (declared.count(name)) {
      info = *declared.at(name);
    } else {  // an initializer fed as an input: its own type and shape are the declaration
      const Tensor& init = graph.initializers.at(name);
      info.name = name, info.elem_type = static_cast<int32_t>(init.dtype()), info.has_shape = true, info.dims = init.shape();
      info.dim_params.assign(init.shape().size(), "");
    }
    const auto pre = preprocess.find(name);
    fixed_[name] = read_input_value(info, text, pre == preprocess.end() ? nullptr : &pre->second);
    sources_[name] = text;
  }
  for (const auto& [name, options] : preprocess)
    if (!(fixed_.count(name) && sources_.count(name)))
      fail("--preprocess " + name + ": input '" + name + "' is not given an image or .wav file with --input");
  for (const std::string& spec : options_.shapes) {
    const auto [name, text] = split_assignment(spec, "--shape");
    check_name(name, "--shape " + spec);
    shapes_[name] = parse_shape(text, "--shape " + name);
  }
  for (const std::string& spec : options_.distributions) {
    const auto [name, text] = split_assignment(spec, "--dist");
    check_name(name, "--dist " + spec);
    const size_t colon = text.find(':'), comma = text.find(',', colon);
    if (!(colon != std::string::npos && comma != std::string::npos))
      fail("--dist " + spec + ": expected normal:MEAN,STD, uniform:LO,HI or int:LO,HI");
    Distribution d;
    const std::string kind = text.substr(0, colon);
    if (kind == "normal") d.kind = Distribution::Kind::Normal;
    else if (kind == "uniform") d.kind = Distribution::Kind::Uniform;
    else if (kind == "int") d.kind = Distribution::Kind::Integer;
    else fail("--dist " + spec + ": unknown distribution '" + kind + "'");
    const std::optional<double> a = parse_finite_number(text.substr(colon + 1, comma - colon - 1)),
                                b = parse_finite_number(text.substr(comma + 1));
    if (!(a && b)) fail("--dist " + spec + ": bad numbers");
    d.a = *a;
    d.b = *b;
    if (!(d.kind == Distribution::Kind::Normal ? d.b >= 0 : d.a <= d.b)) fail("--dist " + spec + ": empty range");
    distributions_[name] = d;
  }
  require(options_.samples >= 1, "--samples must be at least 1");
  if (!(sample_dirs_.empty() || options_.samples == 1))
    fail("--samples makes random samples; --inputs " + options_.inputs + " gives one sample per subfolder (" +
         std::to_string(sample_dirs_.size()) + ")");
  count_ = !sample_dirs_.empty() ? static_cast<int64_t>(sample_dirs_.size()) : options_.random ? options_.samples : 1;
  for (const ValueInfo& in : graph.inputs)
    if (!(fixed_.count(in.name) || options_.random || !sample_dirs_.empty()))
      fail("input '" + in.name + "' was not given: use --input " + in.name + "=FILE.npy, --inputs or random inputs");
}

std::map<std::string, int64_t> SampleSource::bind_symbolic_dims(const TensorMap& feeds, const Sources& sources) const {
  std::map<std::string, std::pair<int64_t, std::string>> bound;  // dim name -> size, and who bound it
  auto bind = [&](const ValueInfo& in, const Shape& shape, const std::string& who) {
    if (!in.has_shape || in.dims.size() != shape.size()) return;  // the session reports rank mismatches
    for (size_t i = 0; i < shape.size(); ++i) {
      const std::string& param = in.dim_params[i];
      if (in.dims[i] >= 0 || param.empty() || param == "?") continue;
      const auto [it, inserted] = bound.try_emplace(param, shape[i], who);
      if (!(inserted || it->second.first == shape[i]))
        fail("symbolic dimension '" + param + "' is " + std::to_string(it->second.first) + " in " + it->second.second +
             " but " + std::to_string(shape[i]) + " in " + who);
    }
  };
  for (const ValueInfo& in : graph_.inputs) {
    const auto f = feeds.find(in.name);
    if (f == feeds.end()) continue;
    const auto s = sources.find(in.name);
    bind(in, f->second.shape(), "input '" + in.name + "'" + (s == sources.end() ? "" : " (" + s->second + ")"));
  }
  for (const ValueInfo& in : graph_.inputs)
    if (shapes_.count(in.name) && !feeds.count(in.name))
      bind(in, shapes_.at(in.name), "--shape " + in.name + "=" + shape_str(shapes_.at(in.name)));
  std::map<std::string, int64_t> sizes;
  for (const auto& [param, size_and_who] : bound) sizes[param] = size_and_who.first;
  return sizes;
}

Tensor SampleSource::random_input(const ValueInfo& info, uint64_t stream, const std::map<std::string, int64_t>& dims) const {
  if (info.boxed)
    fail("input '" + info.name + "' is a " + info.type_name +
         ": random inputs are tensors, and a tensor cannot stand for a sequence or optional");
  if (!(info.elem_type != 0 && dtype_is_supported(info.elem_type) &&
        !dtype_is_narrow(static_cast<DType>(info.elem_type))))
    fail("input '" + info.name + "' has element type " + onnx_type_name(info.elem_type) +
         ", which random inputs cannot fill");
  Shape shape;
  if (shapes_.count(info.name)) {
    shape = shapes_.at(info.name);
  } else {
    if (!(info.has_shape))
      fail("input '" + info.name + "' declares no shape: give one with --shape " + info.name + "=...");
    // Symbolic dims take the size the given inputs bound them to, else 1.
    for (size_t i = 0; i < info.dims.size(); ++i) {
      const auto bound = dims.find(info.dim_params[i]);
      shape.push_back(info.dims[i] >= 0 ? info.dims[i] : bound != dims.end() ? bound->second : 1);
    }
  }
  Distribution dist;
  const DType dtype = static_cast<DType>(info.elem_type);
  if (distributions_.count(info.name)) dist = distributions_.at(info.name);
  else if (!dtype_is_float(dtype)) dist = {Distribution::Kind::Integer, 0, 9};  // small, valid as indices
  memory_budget::require(
      "input '" + info.name + "': random values of shape " + shape_str(shape) + " (" + dtype_name(dtype) + ")",
      tensor_bytes(dtype, shape));
  Random rng(stream);
  Tensor t(dtype, shape);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = 0;
      switch (dist.kind) {
        case Distribution::Kind::Normal: v = dist.a + dist.b * rng.normal(); break;
        case Distribution::Kind::Uniform: v = dist.a + (dist.b - dist.a) * rng.uniform(); break;
        case Distribution::Kind::Integer:
          v = dist.a + std::floor((dist.b - dist.a + 1) * rng.uniform());
          break;
      }
      if constexpr (std::is_same_v<T, bool>) p[i] = v != 0;
      else p[i] = store<T>(static_cast<compute_t<T>>(v));
    }
  });
  return t;
}

TensorMap SampleSource::sample(int64_t index) const {
  if (!(index >= 0 && index < count_)) fail("sample " + std::to_string(index) + " out of range");
  TensorMap feeds = fixed_;
  Sources sources = sources_;
  if (!sample_dirs_.empty()) {
    const fs::path dir = sample_dirs_[static_cast<size_t>(index)];
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (ends_with(entry.path().string(), ".npy") || ends_with(entry.path().string(), ".pb")) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    size_t positional = 0;
    for (const fs::path& file : files) {
      const std::string stem = file.stem().string();
      std::string name = stem;
      bool named = false;
      for (const ValueInfo& in : graph_.inputs) named |= in.name == stem;
      if (!named && ends_with(file.string(), ".pb")) {
        load_tensor_pb(file, &name);  // a TensorProto names its input; input_N.pb files go by position
        named = false;
        for (const ValueInfo& in : graph_.inputs) named |= in.name == name;
      }
      if (!named) {
        if (!(positional < graph_.inputs.size())) fail(file.string() + ": more input files than model inputs");
        name = graph_.inputs[positional++].name;
      }
      feeds[name] = read_tensor_file(file.string());
      sources[name] = file.string();
    }
  }
  // A file that does not fit its input is named here; the session knows only the input.
  for (const ValueInfo& in : graph_.inputs) {
    const auto f = feeds.find(in.name);
    const auto source = sources.find(in.name);
    if (f == feeds.end() || source == sources.end()) continue;
    if (!(in.elem_type == 0 || static_cast<int32_t>(f->second.dtype()) == in.elem_type))
      fail("input '" + in.name + "' (" + source->second + ") expects " + onnx_type_name(in.elem_type) + ", got " +
           dtype_name(f->second.dtype()));
    if (!(shape_fits(in, f->second.shape())))
      fail("input '" + in.name + "' (" + source->second + ") expects shape " + declared_shape_str(in) + ", got " +
           shape_str(f->second.shape()));
  }
  const std::map<std::string, int64_t> dims = bind_symbolic_dims(feeds, sources);
  if (options_.random) {
    // One independent stream per (seed, sample, input): shards regenerate exactly the samples they own.
    uint64_t input_index = 0;
    for (const ValueInfo& in : graph_.inputs) {
      ++input_index;
      if (feeds.count(in.name)) continue;
      const uint64_t stream = options_.seed * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(index) << 20) ^ input_index;
      feeds[in.name] = random_input(in, stream, dims);
    }
  }
  for (const ValueInfo& in : graph_.inputs) require(feeds.count(in.name), "input '" + in.name + "' has no value in sample " + std::to_string(index));
  return feeds;
}

std::string SampleSource::describe() const {
  if (!sample_dirs_.empty()) return "samples from " + options_.inputs;
  std::string d;
  if (!fixed_.empty()) d = "files";
  if (options_.random) d += std::string(d.empty() ? "" : " + ") + "random (seed " + std::to_string(options_.seed) + ")";
  for (const auto& [name, dist] : distributions_) {
    const char* kinds[] = {"normal", "uniform", "int"};
    char buf[128];
    std::snprintf(buf, sizeof buf, " %s=%s:%g,%g", name.c_str(), kinds[static_cast<int>(dist.kind)], dist.a, dist.b);
    d += buf;
  }
  return d;
}

}  // namespace mpa
