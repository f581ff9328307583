// The backends of this run: the CPU's, then those added since (a test's, a loaded module's), and the
// lookup `--device` goes through, which loads a module's backends when first named.
#include <memory>

#include "backends/backend.h"
#include "backends/modules.h"

namespace mpa {

namespace {

std::vector<const Backend*>& registered() {
  static std::vector<const Backend*> all = {&host_backend()};
  return all;
}

// Stands in for a backend whose module could not be loaded: listed by `mpaudit devices`, and named in the
// one-line error of `--device`, with the reason.
class MissingBackend : public Backend {
 public:
  MissingBackend(std::string name, std::string reason) : name_(std::move(name)), reason_(std::move(reason)) {}
  std::string_view name() const override { return name_; }
  Device device() const override { return {Device::Kind::Cuda, -1}; }
  Support available() const override { return {false, reason_}; }
  std::string describe() const override { return reason_; }
  Support supports(const Node&, int64_t, const ExecConfig&) const override { return {false, reason_}; }
  void run(const OpKernel&, KernelContext&) const override { unusable(); }
  Tensor upload(const Tensor&) const override { unusable(); }
  Tensor download(const Tensor&) const override { unusable(); }
  void store_in_format(Tensor&, Format, double) const override { unusable(); }
  Tensor convert(const Tensor&, Format, double) const override { unusable(); }
  double absmax(const Tensor&) const override { unusable(); }

 private:
  [[noreturn]] void unusable() const { fail("--device " + name_ + ": " + reason_); }
  std::string name_, reason_;
};

}  // namespace

const std::vector<const Backend*>& backends() { return registered(); }

void add_backend(const Backend& backend) {
  for (const Backend* b : registered())
    if (!(b->name() != backend.name())) fail("a backend named '" + std::string(backend.name()) + "' is already added");
  registered().push_back(&backend);
}

void load_backends_of(const std::string& family) {
  static std::vector<std::unique_ptr<MissingBackend>> missing;  // outlive every session, as add_backend asks
  if (const std::optional<std::string> why_not = load_backend_module(family)) {
    missing.push_back(std::make_unique<MissingBackend>(family, *why_not));
    add_backend(*missing.back());
  }
}

const Backend& backend_of(const Device& device) {
  for (const Backend* b : backends())
    if (b->device() == device) return *b;
  fail("no backend owns device " + device.name());
}

const Backend& backend_named(const std::string& name) {
  // A module's backends are loaded when first named: "cuda" and "cuda:1" both load the CUDA module.
  const std::string family = name.substr(0, name.find(':'));
  for (const std::string& module : module_families())
    if (module == family) load_backends_of(module);
  std::string known;
  // A family's name alone is its first device; a module that could not be loaded stands as its family's name.
  for (const std::string& wanted : {name, name + ":0", family}) {
    for (const Backend* b : backends()) {
      if (b->name() != wanted) continue;
      const Support here = b->available();
      if (!here.ok) fail("--device " + name + ": not available on this machine: " + here.reason);
      return *b;
    }
  }
  for (const Backend* b : backends()) known += (known.empty() ? "" : ", ") + std::string(b->name());
  fail("--device " + name + ": no such backend in this build (it has: " + known + ")");
}

}  // namespace mpa
