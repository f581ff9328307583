#include "io/inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "io/npy.h"
#include "model/loader.h"

namespace mpa {

namespace fs = std::filesystem;

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& spec, const std::string& option) {
  const size_t eq = spec.find('=');
  require(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(), option + " '" + spec + "': expected NAME=VALUE");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Tensor read_tensor_file(const std::string& file) { return ends_with(file, ".pb") ? load_tensor_pb(file) : read_npy(file); }

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
    require(declared.count(name) || graph.initializers.count(name), source + ": '" + name + "' is not an input of the model");
  };
  if (!options_.inputs.empty()) {
    if (fs::is_directory(options_.inputs)) {
      for (const auto& entry : fs::directory_iterator(options_.inputs))
        if (entry.is_directory()) sample_dirs_.push_back(entry.path().string());
      std::sort(sample_dirs_.begin(), sample_dirs_.end());
      require(!sample_dirs_.empty(), options_.inputs + ": no sample subfolders (expected one folder per sample)");
    } else {
      for (auto& [name, tensor] : read_npz(options_.inputs)) {
        check_name(name, options_.inputs);
        fixed_[name] = std::move(tensor);
      }
    }
  }
  for (const std::string& spec : options_.files) {
    const auto [name, file] = split_assignment(spec, "--input");
    check_name(name, "--input " + spec);
    fixed_[name] = read_tensor_file(file);
  }
  for (const std::string& spec : options_.shapes) {
    const auto [name, text] = split_assignment(spec, "--shape");
    check_name(name, "--shape " + spec);
    shapes_[name] = parse_shape(text, "--shape " + name);
  }
  for (const std::string& spec : options_.distributions) {
    const auto [name, text] = split_assignment(spec, "--dist");
    check_name(name, "--dist " + spec);
    const size_t colon = text.find(':'), comma = text.find(',', colon);
    require(colon != std::string::npos && comma != std::string::npos,
            "--dist " + spec + ": expected normal:MEAN,STD, uniform:LO,HI or int:LO,HI");
    Distribution d;
    const std::string kind = text.substr(0, colon);
    if (kind == "normal") d.kind = Distribution::Kind::Normal;
    else if (kind == "uniform") d.kind = Distribution::Kind::Uniform;
    else if (kind == "int") d.kind = Distribution::Kind::Integer;
    else fail("--dist " + spec + ": unknown distribution '" + kind + "'");
    try {
      d.a = std::stod(text.substr(colon + 1, comma - colon - 1));
      d.b = std::stod(text.substr(comma + 1));
    } catch (const std::exception&) {
      fail("--dist " + spec + ": bad numbers");
    }
    require(d.kind == Distribution::Kind::Normal ? d.b >= 0 : d.a <= d.b, "--dist " + spec + ": empty range");
    distributions_[name] = d;
  }
  require(options_.samples >= 1, "--samples must be at least 1");
  count_ = !sample_dirs_.empty() ? static_cast<int64_t>(sample_dirs_.size()) : options_.random ? options_.samples : 1;
  for (const ValueInfo& in : graph.inputs)
    require(fixed_.count(in.name) || options_.random || !sample_dirs_.empty(),
            "input '" + in.name + "' was not given: use --input " + in.name + "=FILE.npy, --inputs or random inputs");
}

Tensor SampleSource::random_input(const ValueInfo& info, uint64_t stream) const {
  require(info.elem_type != 0 && dtype_is_supported(info.elem_type),
          "input '" + info.name + "' has element type " + onnx_type_name(info.elem_type) + ", which random inputs cannot fill");
  Shape shape;
  if (shapes_.count(info.name)) {
    shape = shapes_.at(info.name);
  } else {
    require(info.has_shape, "input '" + info.name + "' declares no shape: give one with --shape " + info.name + "=...");
    for (int64_t d : info.dims) shape.push_back(d >= 0 ? d : 1);  // symbolic dims default to 1
  }
  Distribution dist;
  const DType dtype = static_cast<DType>(info.elem_type);
  if (distributions_.count(info.name)) dist = distributions_.at(info.name);
  else if (!dtype_is_float(dtype)) dist = {Distribution::Kind::Integer, 0, 9};  // small, valid as indices
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
  require(index >= 0 && index < count_, "sample " + std::to_string(index) + " out of range");
  TensorMap feeds = fixed_;
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
        require(positional < graph_.inputs.size(), file.string() + ": more input files than model inputs");
        name = graph_.inputs[positional++].name;
      }
      feeds[name] = read_tensor_file(file.string());
    }
  }
  if (options_.random) {
    // One independent stream per (seed, sample, input): shards regenerate exactly the samples they own.
    uint64_t input_index = 0;
    for (const ValueInfo& in : graph_.inputs) {
      ++input_index;
      if (feeds.count(in.name)) continue;
      const uint64_t stream = options_.seed * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(index) << 20) ^ input_index;
      feeds[in.name] = random_input(in, stream);
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
