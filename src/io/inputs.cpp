#include "io/inputs.h"

#include <cmath>
#include <map>
#include <random>

#include "io/npy.h"
#include "model/loader.h"

namespace mpa {

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& spec, const std::string& option) {
  const size_t eq = spec.find('=');
  require(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(),
          option + " '" + spec + "': expected NAME=VALUE");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
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

Tensor random_tensor(const ValueInfo& info, const Shape& shape, Random& rng) {
  require(info.elem_type != 0 && dtype_is_supported(info.elem_type),
          "input '" + info.name + "' has element type " + onnx_type_name(info.elem_type) +
              ", which random inputs cannot fill");
  Tensor t(static_cast<DType>(info.elem_type), shape);
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = rng.next() & 1;
      else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(rng.next() % 10);  // small, valid as indices
      else p[i] = store<T>(static_cast<compute_t<T>>(rng.normal()));
    }
  });
  return t;
}

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

TensorMap build_feeds(const Graph& graph, const InputOptions& options) {
  std::map<std::string, const ValueInfo*> declared;
  for (const ValueInfo& in : graph.inputs) declared[in.name] = &in;
  auto check_name = [&](const std::string& name, const std::string& source) {
    require(declared.count(name) || graph.initializers.count(name),
            source + ": '" + name + "' is not an input of the model");
  };
  TensorMap feeds;
  if (!options.npz.empty())
    for (auto& [name, tensor] : read_npz(options.npz)) {
      check_name(name, options.npz);
      feeds[name] = std::move(tensor);
    }
  for (const std::string& spec : options.files) {
    const auto [name, file] = split_assignment(spec, "--input");
    check_name(name, "--input " + spec);
    feeds[name] = ends_with(file, ".pb") ? load_tensor_pb(file) : read_npy(file);
  }
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : options.shapes) {
    const auto [name, text] = split_assignment(spec, "--shape");
    check_name(name, "--shape " + spec);
    shapes[name] = parse_shape(text, "--shape " + name);
  }
  if (options.random) {
    Random rng(options.seed);
    for (const ValueInfo& in : graph.inputs) {
      if (feeds.count(in.name)) continue;
      Shape shape;
      if (shapes.count(in.name)) {
        shape = shapes[in.name];
      } else {
        require(in.has_shape, "input '" + in.name + "' declares no shape: give one with --shape " + in.name + "=...");
        for (int64_t d : in.dims) shape.push_back(d >= 0 ? d : 1);  // symbolic dims default to 1
      }
      feeds[in.name] = random_tensor(in, shape, rng);
    }
  }
  for (const ValueInfo& in : graph.inputs)
    require(feeds.count(in.name), "input '" + in.name + "' was not given: use --input " + in.name +
                                      "=FILE.npy, --inputs FILE.npz or --random-inputs");
  return feeds;
}

}  // namespace mpa
