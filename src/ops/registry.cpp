#include <algorithm>

#include "ops/op.h"

namespace mpa {

// [SECTION] OpInit

const Attribute& OpInit::require(const std::string& key) const {
  const Attribute* a = node_.attribute(key);
  if (!a) fail(node_.label() + ": required attribute '" + key + "' is missing");
  return *a;
}

namespace {

const char* attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::Float: return "FLOAT";
    case Attribute::Kind::Int: return "INT";
    case Attribute::Kind::String: return "STRING";
    case Attribute::Kind::Tensor: return "TENSOR";
    case Attribute::Kind::Graph: return "GRAPH";
    case Attribute::Kind::Floats: return "FLOATS";
    case Attribute::Kind::Ints: return "INTS";
    case Attribute::Kind::Strings: return "STRINGS";
    case Attribute::Kind::Tensors: return "TENSORS";
    case Attribute::Kind::Graphs: return "GRAPHS";
    case Attribute::Kind::Other: break;
  }
  return "an unsupported attribute type";
}

}  // namespace

// The attribute `key` when present, checked to be of `kind`: an attribute of another type (a FLOAT 'axis')
// fails naming the node rather than being read as a default.
const Attribute* OpInit::typed(const std::string& key, Attribute::Kind kind) const {
  const Attribute* a = node_.attribute(key);
  if (a && a->kind != kind)
    fail(node_.label() + ": attribute '" + key + "' is " + attribute_kind_name(a->kind) + ", expected " +
         attribute_kind_name(kind));
  return a;
}

int64_t OpInit::get_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = typed(key, Attribute::Kind::Int);
  return a ? a->i : fallback;
}
float OpInit::get_float(const std::string& key, float fallback) const {
  const Attribute* a = typed(key, Attribute::Kind::Float);
  return a ? a->f : fallback;
}
std::string OpInit::get_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = typed(key, Attribute::Kind::String);
  return a ? a->s : fallback;
}
std::vector<int64_t> OpInit::get_ints(const std::string& key, std::vector<int64_t> fallback) const {
  const Attribute* a = typed(key, Attribute::Kind::Ints);
  return a ? a->ints : fallback;
}
std::vector<float> OpInit::get_floats(const std::string& key, std::vector<float> fallback) const {
  const Attribute* a = typed(key, Attribute::Kind::Floats);
  return a ? a->floats : fallback;
}
int64_t OpInit::require_int(const std::string& key) const {
  require(key);
  return typed(key, Attribute::Kind::Int)->i;
}
const Tensor& OpInit::require_tensor(const std::string& key) const {
  require(key);
  return typed(key, Attribute::Kind::Tensor)->t;
}

// [SECTION] KernelContext

const Tensor& KernelContext::input(size_t i) const {
  if (!has_input(i)) {
    if (const ValuePtr& value = value_input(i))
      fail(node_.label() + ": input " + std::to_string(i) + " is " + value->describe() + ", not a tensor");
    fail(node_.label() + ": input " + std::to_string(i) + " is required but missing");
  }
  return *inputs_[i];
}

const ValuePtr& KernelContext::value_input(size_t i) const {
  static const ValuePtr none;
  return values_ && i < values_->inputs.size() ? values_->inputs[i] : none;
}

void KernelContext::set_value_output(size_t i, ValuePtr value) {
  if (!(i < outputs_.size())) fail(node_.label() + ": output " + std::to_string(i) + " out of range");
  if (!values_) fail(node_.label() + ": makes " + value->describe() + ", which this run cannot hold");
  values_->outputs.resize(outputs_.size());
  values_->outputs[i] = std::move(value);
}

bool KernelContext::output_requested(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }

Tensor& KernelContext::allocate_output(size_t i, DType dtype, Shape shape) {
  if (!(i < outputs_.size())) fail(node_.label() + ": output " + std::to_string(i) + " out of range");
  outputs_[i] = Tensor(dtype, std::move(shape));
  return outputs_[i];
}

void KernelContext::set_output(size_t i, Tensor tensor) {
  if (!(i < outputs_.size())) fail(node_.label() + ": output " + std::to_string(i) + " out of range");
  outputs_[i] = std::move(tensor);
}

// [SECTION] OpRegistry

OpRegistry& OpRegistry::instance() {
  static OpRegistry registry;
  return registry;
}

bool OpRegistry::add(std::string_view backend, const std::string& domain, const std::string& op_type,
                     std::vector<int64_t> since_versions, KernelFactory factory) {
  Versions& versions = table_[{std::string(backend), domain, op_type}];
  for (int64_t v : since_versions) versions.by_since.emplace_back(v, factory);
  std::sort(versions.by_since.begin(), versions.by_since.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return true;
}

const KernelFactory* OpRegistry::find(std::string_view backend, const std::string& domain, const std::string& op_type,
                                      int64_t opset) const {
  auto it = table_.find({std::string(backend), domain, op_type});
  if (it == table_.end()) return nullptr;
  const KernelFactory* best = nullptr;
  for (const auto& [since, factory] : it->second.by_since)
    if (since <= opset) best = &factory;
  return best;
}

std::string OpRegistry::why_unsupported(std::string_view backend, const std::string& domain, const std::string& op_type,
                                        int64_t opset) const {
  auto it = table_.find({std::string(backend), domain, op_type});
  const std::string name = domain.empty() ? op_type : domain + "." + op_type;
  // The CPU runs every op mpaudit knows: an op it lacks is unsupported, one another backend lacks is its gap.
  if (it == table_.end())
    return backend == "cpu" ? "operator " + name + " is not supported (domain " +
                                  (domain.empty() ? "ai.onnx" : domain) + ", opset " + std::to_string(opset) + ")"
                            : "the " + std::string(backend) + " backend has no kernel for " + name;
  return "operator " + name + " at opset " + std::to_string(opset) + " is older than the first supported version " +
         std::to_string(it->second.by_since.front().first);
}

bool OpRegistry::add_traits(const std::string& domain, const std::string& op_type, OpTraits traits) {
  traits_[{domain, op_type}] = traits;
  return true;
}

const OpTraits* OpRegistry::traits(const std::string& domain, const std::string& op_type) const {
  auto it = traits_.find({domain, op_type});
  return it == traits_.end() ? nullptr : &it->second;
}

std::string_view precision_class_name(PrecisionClass precision) {
  switch (precision) {
    case PrecisionClass::Exact: return "exact";
    case PrecisionClass::Elementwise: return "elementwise";
    case PrecisionClass::Transcendental: return "transcendental";
    case PrecisionClass::Accumulating: return "accumulating";
  }
  return "elementwise";
}

const OpTraits& traits_of(const Node& node) {
  static const OpTraits none;
  const OpTraits* traits = OpRegistry::instance().traits(node.domain, node.op_type);
  return traits ? *traits : none;
}

std::vector<OpRegistry::Entry> OpRegistry::entries() const {
  std::vector<Entry> out;
  for (const auto& [key, versions] : table_) {
    Entry e{std::get<0>(key), std::get<1>(key), std::get<2>(key), {}};
    for (const auto& v : versions.by_since) e.since_versions.push_back(v.first);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace mpa
