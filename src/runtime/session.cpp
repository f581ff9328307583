#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/memory_budget.h"
#include "runtime/nvtx_range.h"
#include "runtime/precision.h"

namespace mpa {

namespace {

// Folded outputs (Session::folded_) are kept within 1/kFoldedShareOfBudget of the memory budget.
constexpr int64_t kFoldedShareOfBudget = 8;

// Whether the run this thread is in folds constant nodes, for the subgraph runs its control-flow nodes make on
// this thread (they run their bodies on the calling thread): outside any run, true.
thread_local bool t_constants_hold = true;

// Sets t_constants_hold for the runs nested in one run, and restores it after.
class ConstantsHold {
 public:
  explicit ConstantsHold(bool hold) : before_(t_constants_hold) { t_constants_hold = hold; }
  ~ConstantsHold() { t_constants_hold = before_; }
  ConstantsHold(const ConstantsHold&) = delete;
  ConstantsHold& operator=(const ConstantsHold&) = delete;

 private:
  bool before_;
};

// One stream's values during a run: every slot's value (on the device of the backend that made it) and
// the format it is stored in, and the copies made for consumers computing in another format or running on
// another device, once per (slot, format, device); kAsStored marks a copy that only moved.
constexpr int kAsStored = -1;
struct StreamValues {
  std::vector<Tensor> values;
  std::vector<Format> format;
  std::map<std::tuple<int, int, Device>, Tensor> copies;
  std::map<std::pair<const Tensor*, Device>, Tensor> outer_copies;  // values of enclosing scopes, moved here
  // Per slot, its sequence/optional value (tensor/value.h); empty until the run meets one.
  std::vector<ValuePtr> boxed;
  void set_boxed(int slot, ValuePtr value) {
    boxed.resize(values.size());
    boxed[size_t(slot)] = std::move(value);
  }
  void drop_copies(int slot) {
    copies.erase(copies.lower_bound({slot, INT_MIN, Device{}}), copies.lower_bound({slot + 1, INT_MIN, Device{}}));
  }
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Prefixes a kernel's message with the node label unless the kernel already named it.
std::string with_node(const Node& node, const std::string& message) {
  const std::string label = node.label();
  return message.rfind(label, 0) == 0 ? message : label + ": " + message;
}

// Called in a catch block: the exception in flight goes on naming the node, out-of-memory included.
[[noreturn]] void rethrow_naming(const Node& node) {
  try {
    throw;
  } catch (const UnsupportedType& e) {
    throw UnsupportedType(with_node(node, e.what()));
  } catch (const Error& e) {
    fail(with_node(node, e.what()));
  } catch (const std::bad_alloc&) {
    fail(node.label() + ": out of memory (a smaller --max-memory makes mpaudit stop before the system does)");
  }
}

void collect_unsupported(const Graph& graph, std::vector<UnsupportedNode>& out) {
  const OpRegistry& registry = OpRegistry::instance();
  for (const Node& node : graph.nodes) {
    const int64_t opset = graph.opset(node.domain);
    if (opset == 0)
      out.push_back({&node, "operator domain '" + node.domain + "' of " + node.op_type + " is not imported by the model"});
    else if (!registry.find(host_backend().kernel_table(), node.domain, node.op_type, opset))
      out.push_back({&node, registry.why_unsupported(host_backend().kernel_table(), node.domain, node.op_type, opset)});
    for (const auto& [key, attribute] : node.attributes) {
      if (attribute.g) collect_unsupported(*attribute.g, out);
      for (const auto& g : attribute.graphs) collect_unsupported(*g, out);
    }
  }
}

// The epilogues of one run of a producer (Session::epilogue_chains_): its chain's readers, with their other
// inputs, made into epilogues once the producer knows its output's shape, up to the first that cannot be one.
class ChainEpilogues : public EpilogueSource {
 public:
  void add(const OpKernel& kernel, size_t from, std::vector<const Tensor*> inputs) {
    links_.push_back({&kernel, from, std::move(inputs)});
  }
  bool empty() const { return links_.empty(); }
  const std::vector<const Epilogue*>& epilogues_for(const Shape& shape) override {
    if (asked_) return made_;
    asked_ = true;
    for (const Link& link : links_) {
      std::unique_ptr<Epilogue> e = link.kernel->as_epilogue(link.from, link.inputs, shape);
      if (!e) break;
      made_.push_back(e.get());
      owned_.push_back(std::move(e));
    }
    return made_;
  }
  // How many of the chain's readers ran as epilogues.
  size_t fused() const { return made_.size(); }

 private:
  struct Link {
    const OpKernel* kernel;
    size_t from;
    std::vector<const Tensor*> inputs;
  };
  std::vector<Link> links_;
  std::vector<std::unique_ptr<Epilogue>> owned_;
  std::vector<const Epilogue*> made_;
  bool asked_ = false;
};

}  // namespace

size_t RunRecord::nbytes() const {
  size_t bytes = 0;
  for (const Tensor& t : values) bytes += t.defined() ? t.nbytes() : 0;
  return bytes;
}

bool meets_values(const Node& node, const std::vector<const Tensor*>& inputs,
                  const std::vector<const Tensor*>& outputs) {
  for (size_t k = 0; k < node.inputs.size() && k < inputs.size(); ++k)
    if (!node.inputs[k].empty() && !inputs[k]) return true;
  for (size_t k = 0; k < node.outputs.size() && k < outputs.size(); ++k)
    if (!node.outputs[k].empty() && !outputs[k]) return true;
  return false;
}

std::vector<UnsupportedNode> find_unsupported_nodes(const Graph& graph) {
  std::vector<UnsupportedNode> out;
  collect_unsupported(graph, out);
  return out;
}

Session::Session(std::shared_ptr<const Graph> graph, SessionOptions options)
    : graph_(std::move(graph)),
      options_(std::move(options)),
      requested_(&backend_named(options_.device)),
      host_(&host_backend()),
      own_kernels_(requested_->kernel_table() != host_->kernel_table()) {
  config_ = config_for(options_.precision, options_.accumulation, options_.profile, options_.threads);
  for (const auto& [name, format] : options_.node_precision) {
    // An init-capture: clang 14 (the fuzz build) cannot capture the structured binding itself.
    const bool known = std::any_of(graph_->nodes.begin(), graph_->nodes.end(),
                                   [&wanted = name](const Node& n) { return n.name == wanted; });
    if (!(known)) fail("no node named '" + name + "' to set the precision of");
    if (!((format == Format::FP64) == (options_.precision == Format::FP64)))
      fail("fp64 runs the whole graph: it cannot be mixed with other formats (node '" + name + "')");
  }
  for (const Node& node : graph_->nodes) {
    ExecConfig c = config_;
    auto it = options_.node_precision.find(node.name);
    if (it != options_.node_precision.end()) c = config_for(it->second, c.accumulation, c.profile, c.threads);
    node_configs_.push_back(c);
    if (c.storage != Format::FP32) initializers_in(c.storage);  // converted once, before any run
  }
  // Maps, sparse tensors and nested sequences do not flow through the runtime: refused up front, by type.
  for (const auto* list : {&graph_->inputs, &graph_->outputs})
    for (const ValueInfo& v : *list)
      if (!v.is_tensor && !v.boxed)
        throw UnsupportedType("graph " + std::string(list == &graph_->inputs ? "input" : "output") + " '" + v.name +
                              "' is a " + v.type_name +
                              ", which mpaudit does not support (tensors, sequences of tensors and optionals only)");
  // Every node has a CPU kernel (the fallback of every placement); a device backend's own kernels are made
  // beside them where it registers one.
  const auto unsupported = find_unsupported_nodes(*graph_);
  if (!unsupported.empty()) fail(unsupported.front().node->label() + ": " + unsupported.front().reason);
  const OpRegistry& registry = OpRegistry::instance();
  for (const Node& node : graph_->nodes) {
    const int64_t opset = graph_->opset(node.domain);
    try {
      kernels_.push_back((*registry.find(host_->kernel_table(), node.domain, node.op_type, opset))(OpInit(node, opset)));
      const KernelFactory* device =
          own_kernels_ ? registry.find(requested_->kernel_table(), node.domain, node.op_type, opset) : nullptr;
      device_kernels_.push_back(device ? (*device)(OpInit(node, opset)) : nullptr);
    } catch (...) {
      rethrow_naming(node);
    }
  }
  // Liveness: the last node reading each value frees it; graph outputs and initializers stay.
  std::set<std::string> keep;
  for (const auto& out : graph_->outputs) keep.insert(out.name);
  std::unordered_map<std::string, size_t> last_reader;
  for (size_t i = 0; i < graph_->nodes.size(); ++i) {
    const Node& node = graph_->nodes[i];
    for (const auto& v : node.inputs)
      if (!v.empty()) last_reader[v] = i;
    for (const auto& v : node.implicit_inputs) last_reader[v] = i;
  }
  release_after_.resize(graph_->nodes.size());
  for (const auto& [value, index] : last_reader)
    if (!keep.count(value) && !graph_->initializers.count(value)) release_after_[index].push_back(value);

  auto slot_for = [&](const std::string& name) {
    return slot_of_.emplace(name, static_cast<int>(slot_of_.size())).first->second;
  };
  for (const ValueInfo& in : graph_->inputs) {
    if (in.boxed == Value::Kind::Optional)
      optional_inputs_.push_back(slot_for(in.name));
    else
      slot_for(in.name);
    feedable_.insert(in.name);
  }
  for (const auto& [name, t] : graph_->initializers) {
    slot_for(name);
    feedable_.insert(name);
  }
  for (const Node& node : graph_->nodes)
    for (const auto& out : node.outputs)
      if (!out.empty()) slot_for(out);
  node_slots_.resize(graph_->nodes.size());
  for (size_t i = 0; i < graph_->nodes.size(); ++i) {
    const Node& node = graph_->nodes[i];
    NodeSlots& ns = node_slots_[i];
    for (const auto& in : node.inputs) {
      auto slot = slot_of_.find(in);
      ns.inputs.push_back(in.empty() || slot == slot_of_.end() ? -1 : slot->second);
      auto init = graph_->initializers.find(in);
      ns.initializers.push_back(in.empty() || init == graph_->initializers.end() ? nullptr : &init->second);
    }
    for (const auto& out : node.outputs) ns.outputs.push_back(out.empty() ? -1 : slot_of_.at(out));
    for (const auto& name : release_after_[i])
      if (auto slot = slot_of_.find(name); slot != slot_of_.end()) ns.release.push_back(slot->second);
  }
  find_constants();
  const ValueUse use = value_use();
  find_silu(use);
  find_epilogue_chains(use);
}

Session::ValueUse Session::value_use() const {
  ValueUse use;
  for (size_t i = 0; i < graph_->nodes.size(); ++i) {
    const Node& node = graph_->nodes[i];
    for (const auto& in : node.inputs)
      if (!in.empty()) ++use.reads[in], use.reader[in] = i;
    for (const auto& in : node.implicit_inputs) use.reads[in] += 2;
    for (const auto& out : node.outputs)
      if (!out.empty()) use.producer[out] = i;
  }
  for (const auto& out : graph_->outputs) use.reads[out.name] += 2;
  return use;
}

void Session::find_epilogue_chains(const ValueUse& use) {
  const OpRegistry& registry = OpRegistry::instance();
  for (size_t i = 0; i < graph_->nodes.size(); ++i) {
    const Node& producer = graph_->nodes[i];
    if (!kernels_[i]->takes_epilogues() || foldable_[i] || producer.outputs.empty()) continue;
    std::vector<EpilogueLink> chain;
    for (std::string value = producer.outputs[0]; !value.empty();) {
      const auto read = use.reads.find(value);
      if (read == use.reads.end() || read->second != 1) break;
      const size_t j = use.reader.at(value);
      const Node& node = graph_->nodes[j];
      // One output named (BatchNormalization with more computes the batch's statistics), no subgraph, values
      // computed by correctly rounded operations only: a math-library function may give other bits on the
      // remainder of a vector loop, and an epilogue's loops start where the producer's blocks do.
      const OpTraits* traits = registry.traits(node.domain, node.op_type);
      const bool one_output = !node.outputs.empty() && std::all_of(node.outputs.begin() + 1, node.outputs.end(),
                                                                   [](const std::string& o) { return o.empty(); });
      if (!one_output || !node.implicit_inputs.empty() || foldable_[j] || silu_.count(j) || !traits ||
          !(traits->precision == PrecisionClass::Exact || traits->precision == PrecisionClass::Elementwise))
        break;
      const size_t from =
          static_cast<size_t>(std::find(node.inputs.begin(), node.inputs.end(), value) - node.inputs.begin());
      chain.push_back({j, from});
      value = node.outputs[0];
    }
    if (!chain.empty()) epilogue_chains_.emplace(i, std::move(chain));
  }
}

void Session::find_silu(const ValueUse& use) {
  silu_mul_of_.assign(graph_->nodes.size(), -1);
  constexpr int64_t kSwishOpset = 24;  // Swish's first opset
  const KernelFactory* swish = OpRegistry::instance().find(host_->kernel_table(), "", "Swish", kSwishOpset);
  if (!swish) return;
  const auto& reads = use.reads;
  const auto& producer = use.producer;
  for (size_t m = 0; m < graph_->nodes.size(); ++m) {
    const Node& mul = graph_->nodes[m];
    if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || foldable_[m]) continue;
    for (size_t x = 0; x < 2; ++x) {
      const std::string &x_name = mul.inputs[x], &s_name = mul.inputs[1 - x];
      const auto from = producer.find(s_name);
      if (x_name.empty() || x_name == s_name || from == producer.end() || reads.at(s_name) != 1) continue;
      const Node& sigmoid = graph_->nodes[from->second];
      if (sigmoid.op_type != "Sigmoid" || !sigmoid.domain.empty() || sigmoid.inputs != std::vector{x_name} ||
          foldable_[from->second])
        continue;
      Silu& silu = silu_[m];  // made in place: the kernel may keep its node
      silu.x = x;
      silu.swish = {mul.name, "Swish", "", {x_name}, mul.outputs, {}, {}};
      silu.kernel = (*swish)(OpInit(silu.swish, kSwishOpset));
      silu_mul_of_[from->second] = static_cast<int>(m);
      break;
    }
  }
}

void Session::find_constants() {
  std::set<std::string> inputs, defined;
  for (const ValueInfo& in : graph_->inputs) inputs.insert(in.name);
  defined = inputs;
  for (const Node& node : graph_->nodes)
    for (const auto& out : node.outputs) defined.insert(out);
  for (const auto& name : options_.outer_constants)
    if (!defined.count(name) && !graph_->initializers.count(name)) constants_.insert(name);
  for (const auto& [name, t] : graph_->initializers)
    if (!inputs.count(name)) constants_.insert(name);
  for (const Node& node : graph_->nodes) {
    bool foldable = node.implicit_inputs.empty() &&
                    std::none_of(node.attributes.begin(), node.attributes.end(), [](const auto& a) {
                      return a.second.kind == Attribute::Kind::Graph || a.second.kind == Attribute::Kind::Graphs;
                    });
    for (const auto& in : node.inputs) foldable = foldable && (in.empty() || constants_.count(in));
    foldable_.push_back(foldable);
    if (foldable)
      for (const auto& out : node.outputs)
        if (!out.empty()) constants_.insert(out);
  }
}

Session::~Session() = default;

TensorMap Session::run_subgraph(const std::shared_ptr<const Graph>& graph, const TensorMap& feeds,
                                const ExecConfig& config, const ScopeLookup* scope, SubgraphObserver* observer,
                                ValueMap* values) const {
  SessionOptions options;
  options.threads = config.threads;
  options.precision = format_of(config);
  options.accumulation = config.accumulation;
  options.profile = config.profile;
  options.device = options_.device;
  const Session* session = nullptr;
  {
    std::lock_guard<std::mutex> lock(subgraph_mutex_);
    auto& slot = subgraph_sessions_[{graph.get(), options.precision, options.accumulation, options.profile,
                                     options.threads}];
    if (!slot) {
      options.outer_constants = constants_;
      slot = std::make_unique<Session>(graph, options);
    }
    session = slot.get();
  }
  return session->run(feeds, {}, nullptr, scope, observer, values);
}

void Session::check_feeds(const TensorMap& feeds, const ValueMap* value_feeds) const {
  for (const ValueInfo& in : graph_->inputs) {
    auto it = feeds.find(in.name);
    const ValuePtr* value = nullptr;
    if (value_feeds)
      if (auto v = value_feeds->find(in.name); v != value_feeds->end()) value = &v->second;
    if (in.boxed) {
      if (it != feeds.end())
        fail("input '" + in.name + "' expects " + in.type_name + ", got a tensor (" + dtype_name(it->second.dtype()) +
             " " + shape_str(it->second.shape()) + "): a plain tensor cannot stand for a sequence or optional");
      if (*in.boxed == Value::Kind::Optional && !value) continue;  // an omitted optional is an empty one
      if (!(value && *value)) fail("graph input '" + in.name + "' (" + in.type_name + ") was not given a value");
      // An optional input takes a sequence too, as the optional holding it (a loop-carried optional(sequence)).
      if ((*value)->kind == Value::Kind::Optional && *in.boxed == Value::Kind::Sequence)
        fail("input '" + in.name + "' expects " + in.type_name + ", got " + (*value)->describe());
      continue;
    }
    // A body input declared without a type (some exporters write loop-carried sequences so) takes any value.
    if (value && it == feeds.end() && in.elem_type == 0 && !in.has_shape) continue;
    if (value && it == feeds.end())
      fail("input '" + in.name + "' expects a tensor" + (in.elem_type ? "(" + onnx_type_name(in.elem_type) + ")" : "") +
           ", got " + (*value ? (*value)->describe() : "no value"));
    if (!(it != feeds.end())) fail("graph input '" + in.name + "' was not given a value");
    const Tensor& t = it->second;
    // An FP64 session holds float32 values widened to double, a subgraph's loop-carried ones included.
    const bool widened = options_.precision == Format::FP64 && t.dtype() == DType::Float64 &&
                         in.elem_type == static_cast<int32_t>(DType::Float32);
    if (in.elem_type != 0 && !widened)
      if (!(static_cast<int32_t>(t.dtype()) == in.elem_type))
        fail("input '" + in.name + "' expects " + onnx_type_name(in.elem_type) + ", got " + dtype_name(t.dtype()));
    if (!(shape_fits(in, t.shape())))
      fail("input '" + in.name + "' expects shape " + declared_shape_str(in) + ", got " + shape_str(t.shape()));
  }
  for (const auto& [name, tensor] : feeds)
    if (!(feedable_.count(name))) fail("'" + name + "' is not an input of the model");
}

const std::map<std::string, Tensor>& Session::initializers_in(Format storage, bool narrow_doubles,
                                                              bool fp8_absmax_scaling) const {
  // Narrowing matters only to FP32 storage (other formats narrow float64 anyway), scaling only to FP8.
  narrow_doubles = narrow_doubles && storage == Format::FP32;
  fp8_absmax_scaling = absmax_scaled(storage, fp8_absmax_scaling);
  if (storage == Format::FP32 && !narrow_doubles) return graph_->initializers;
  std::lock_guard<std::mutex> lock(initializers_mutex_);
  auto [it, made] = initializers_in_.try_emplace({storage, narrow_doubles, fp8_absmax_scaling});
  if (made)
    for (const auto& [name, t] : graph_->initializers) {
      const double scale = fp8_absmax_scaling ? absmax_scale(storage, host_->absmax(t)) : 1;
      const Tensor& converted = it->second.emplace(name, host_->convert(t, storage, scale)).first->second;
      if ((t.dtype() == DType::Float32 || t.dtype() == DType::Float64) && storage != Format::FP32 &&
          storage != Format::FP64)
        converted_from_.emplace(&converted, Conversion{&t, storage, scale});
    }
  return it->second;
}

const Backend& Session::backend_for(size_t index, const ExecConfig& config) const {
  if (requested_ == host_) return *host_;
  const Node& node = graph_->nodes[index];
  if (own_kernels_ && !device_kernels_[index] && !traits_of(node).shape_only) return *host_;
  return requested_->supports(node, graph_->opset(node.domain), config).ok ? *requested_ : *host_;
}

const Backend& Session::reader_of(size_t index, size_t input, const Backend& runs_on) const {
  if (&runs_on == host_) return runs_on;
  const std::vector<int>& host_inputs = traits_of(graph_->nodes[index]).host_inputs;
  const bool on_host = std::find(host_inputs.begin(), host_inputs.end(), static_cast<int>(input)) != host_inputs.end();
  return on_host ? *host_ : runs_on;
}

Placement Session::placement(size_t index, const ExecConfig& config) const {
  const Backend& backend = backend_for(index, config);
  if (&backend == requested_) return {&backend, {}};
  const Node& node = graph_->nodes[index];
  const int64_t opset = graph_->opset(node.domain);
  if (own_kernels_ && !device_kernels_[index] && !traits_of(node).shape_only)
    return {&backend, OpRegistry::instance().why_unsupported(requested_->kernel_table(), node.domain, node.op_type, opset)};
  return {&backend, requested_->supports(node, opset, config).reason};
}

Transfers Session::transfers() const {
  Transfers total{uploads_, downloads_, bytes_uploaded_, bytes_downloaded_};
  std::lock_guard<std::mutex> lock(subgraph_mutex_);
  for (const auto& [key, session] : subgraph_sessions_) {
    const Transfers inner = session->transfers();
    total.uploads += inner.uploads;
    total.downloads += inner.downloads;
    total.bytes_uploaded += inner.bytes_uploaded;
    total.bytes_downloaded += inner.bytes_downloaded;
  }
  return total;
}

const Tensor* Session::resident(const Tensor& initializer, const Backend& at) const {
  if (initializer.device() == at.device()) return &initializer;
  std::lock_guard<std::mutex> lock(resident_mutex_);
  auto r = resident_.find({&initializer, at.device()});
  if (r == resident_.end()) {
    // A weight in a format whose original the device holds already (the reference run moved it there) is made
    // there from it, as the host made it (bit-equal conversions): an audit moves its weights up once, not once
    // per format.
    std::optional<Conversion> from;
    {
      std::lock_guard<std::mutex> conversions(initializers_mutex_);
      if (auto c = converted_from_.find(&initializer); c != converted_from_.end()) from = c->second;
    }
    const auto original = from ? resident_.find({from->original, at.device()}) : resident_.end();
    Tensor copy = original != resident_.end() ? at.convert(original->second, from->storage, from->scale)
                                              : move_to(initializer, at);
    r = resident_.emplace(std::make_pair(&initializer, at.device()), std::move(copy)).first;
    if (initializer.device().is_host()) resident_originals_.emplace(&r->second, &initializer);
  }
  return &r->second;
}

const Tensor* Session::resident_original(const Tensor& copy) const {
  std::lock_guard<std::mutex> lock(resident_mutex_);
  auto r = resident_originals_.find(&copy);
  return r == resident_originals_.end() ? nullptr : r->second;
}

Tensor Session::move_to(const Tensor& tensor, const Backend& to) const {
  if (tensor.device() == to.device()) return tensor;
  Tensor host = tensor;
  if (!tensor.device().is_host()) {
    host = backend_of(tensor.device()).download(tensor);
    ++downloads_;
    bytes_downloaded_ += static_cast<int64_t>(tensor.nbytes());
  }
  if (to.device().is_host()) return host;
  ++uploads_;
  bytes_uploaded_ += static_cast<int64_t>(host.nbytes());
  return to.upload(host);
}

void Session::run_on(const Backend& backend, size_t index, const std::vector<const Tensor*>& inputs,
                     std::vector<Tensor>& outputs, const ExecConfig& config, const ScopeLookup* scope,
                     SubgraphObserver* observer, NodeValues* values, EpilogueSource* epilogues) const {
  const OpKernel& kernel = &backend == host_ || !device_kernels_[index] ? *kernels_[index] : *device_kernels_[index];
  run_kernel(backend, graph_->nodes[index], kernel, inputs, outputs, config, scope, observer, values, epilogues);
}

void Session::run_kernel(const Backend& backend, const Node& node, const OpKernel& kernel,
                         const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                         const ExecConfig& config, const ScopeLookup* scope, SubgraphObserver* observer,
                         NodeValues* values, EpilogueSource* epilogues) const {
  KernelContext ctx(node, inputs, outputs, config);
  ctx.set_epilogue_source(epilogues);
  ctx.set_scope(scope);
  ctx.set_observer(observer);
  ctx.set_subgraphs(this);
  if (values) values->outputs.clear();
  ctx.set_values(values);
  try {
    backend.run(kernel, ctx);
  } catch (...) {
    rethrow_naming(node);
  }
  for (size_t k = 0; k < node.outputs.size(); ++k)
    if (!node.outputs[k].empty() && !outputs[k].defined() &&
        !(values && k < values->outputs.size() && values->outputs[k]))
      fail(node.label() + ": produced no value for output '" + node.outputs[k] + "'");
}

std::vector<Tensor> Session::rerun(size_t index, const std::vector<const Tensor*>& inputs, const ExecConfig& config,
                                   bool computes_in_format, const ScopeLookup* scope,
                                   const std::function<double(size_t)>& output_scale, bool where_run) const {
  const Backend& backend = backend_for(index, config);
  std::vector<Tensor> moved(inputs.size());
  std::vector<const Tensor*> on_backend(inputs);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Backend& reader = reader_of(index, k, backend);
    if (!inputs[k] || inputs[k]->device() == reader.device()) continue;
    // The reference's initializers reach an isolated run as the device's resident copies; a host input (the
    // parameters of a normalisation, say) reads the host original they were made from, with no download.
    const Tensor* original = reader.device().is_host() ? resident_original(*inputs[k]) : nullptr;
    if (original) {
      on_backend[k] = original;
    } else {
      moved[k] = move_to(*inputs[k], reader);
      on_backend[k] = &moved[k];
    }
  }
  std::vector<Tensor> outputs;
  run_on(backend, index, on_backend, outputs, config, scope, nullptr, nullptr);
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o].defined()) continue;
    if (config.storage != Format::FP32 || computes_in_format)
      backend.store_in_format(outputs[o], config.storage, output_scale ? output_scale(o) : 1);
    if (!where_run) outputs[o] = move_to(outputs[o], *host_);
  }
  return outputs;
}

TensorMap Session::run(const TensorMap& feeds, const NodeHook& hook, RunStats* stats, const ScopeLookup* outer,
                       SubgraphObserver* observer, ValueMap* values) const {
  // The single-stream run shows its nodes to the hook and the subgraph observer of an enclosing run.
  class Watch : public ExecObserver {
   public:
    Watch(const Session& session, const NodeHook& hook, SubgraphObserver* observer)
        : session_(session), hook_(hook), observer_(observer) {}
    SubgraphObserver* subgraphs(size_t, size_t) override { return observer_; }
    void node_done(size_t index, const std::vector<StreamStep>& streams) override {
      const StreamStep& step = streams.front();
      if (hook_) hook_(session_.graph().nodes[index], index, step.outputs);
      if (observer_) observer_->node_done(session_, index, step.inputs, step.outputs, *step.config, *step.scope);
    }

   private:
    const Session& session_;
    const NodeHook& hook_;
    SubgraphObserver* observer_;
  };
  static const std::vector<StreamPlan> own_plan(1);  // the session's own configs and initializers
  Watch watch(*this, hook, observer);
  std::vector<ValueMap> value_outputs;
  std::vector<TensorMap> outputs = run_streams(feeds, own_plan, hook || observer ? &watch : nullptr, outer, stats,
                                               values, values ? &value_outputs : nullptr);
  if (values) *values = std::move(value_outputs.front());
  return std::move(outputs.front());
}

std::vector<TensorMap> Session::run_streams(const TensorMap& feeds, const std::vector<StreamPlan>& streams,
                                            ExecObserver* observer, const ScopeLookup* outer, RunStats* stats,
                                            const ValueMap* value_feeds, std::vector<ValueMap>* value_outputs) const {
  check_feeds(feeds, value_feeds);
  host_->use_threads(options_.threads);
  if (requested_ != host_) requested_->use_threads(options_.threads);
  if (requested_ != host_) requested_->time_nodes(observer && observer->wants_device_time());
  using clock = std::chrono::steady_clock;
  // Values live in their producer's storage format (feeds and initializers in their own) on its backend's
  // device; a node whose format or device differs reads a copy, made once per value, format and device.
  std::vector<StreamValues> tables(streams.size());
  for (const StreamPlan& plan : streams) {
    require(!observer || plan.reused.empty(), "an observed run reruns every node");
    require(plan.reused.empty() || plan.reuse, "a run that reuses nodes needs the record of their outputs");
    if (plan.record)
      *plan.record = RunRecord{std::vector<Tensor>(slot_of_.size()), std::vector<Format>(slot_of_.size()), {}};
  }
  // Node output `slot` of stream `s` becomes `value` (stored in `format`; `boxed`: a sequence/optional output),
  // in the stream's table and in its record, if it keeps one.
  const auto put_slot = [&](size_t s, int slot, Tensor value, Format format, ValuePtr boxed) {
    tables[s].drop_copies(slot);
    tables[s].values[size_t(slot)] = std::move(value);
    tables[s].format[size_t(slot)] = format;
    if (boxed) tables[s].set_boxed(slot, std::move(boxed));
    RunRecord* record = streams[s].record;
    if (!record) return;
    record->values[size_t(slot)] = tables[s].values[size_t(slot)];
    record->format[size_t(slot)] = tables[s].format[size_t(slot)];
    if (!tables[s].boxed.empty() && tables[s].boxed[size_t(slot)]) {
      record->boxed.resize(record->values.size());
      record->boxed[size_t(slot)] = tables[s].boxed[size_t(slot)];
    }
  };
  for (StreamValues& table : tables) {
    table.values.resize(slot_of_.size());
    table.format.assign(slot_of_.size(), Format::FP32);
    for (const auto& [name, t] : feeds) table.values[size_t(slot_of_.at(name))] = t;
    // Value feeds of names this graph does not define are its enclosing scopes' values.
    if (value_feeds)
      for (const auto& [name, v] : *value_feeds)
        if (auto slot = slot_of_.find(name); slot != slot_of_.end() && feedable_.count(name))
          table.set_boxed(slot->second, v);
    for (const int slot : optional_inputs_)
      if (table.boxed.empty() || !table.boxed[size_t(slot)]) table.set_boxed(slot, Value::make_optional(Tensor()));
  }
  // A sequence/optional value visible here by slot (-1: none) or name, or null: sought only where no tensor is.
  const auto boxed_of = [&](size_t s, int slot, const std::string& name) -> ValuePtr {
    const std::vector<ValuePtr>& boxed = tables[s].boxed;
    if (slot >= 0 && size_t(slot) < boxed.size() && boxed[size_t(slot)]) return boxed[size_t(slot)];
    if (!value_feeds) return nullptr;
    auto v = value_feeds->find(name);
    return v != value_feeds->end() ? v->second : nullptr;
  };
  std::vector<NodeValues> node_values(streams.size());
  auto config_of = [&](size_t s, size_t i) -> const ExecConfig& {
    return streams[s].node_config.empty() ? node_configs_[i] : streams[s].node_config[i];
  };
  // Where each node runs in each stream: decided once per run, all on the CPU unless another backend is asked for.
  std::vector<std::vector<const Backend*>> placed(requested_ == host_ ? 0 : streams.size());
  for (size_t s = 0; s < placed.size(); ++s)
    for (size_t i = 0; i < graph_->nodes.size(); ++i) placed[s].push_back(&backend_for(i, config_of(s, i)));
  auto backend_at = [&](size_t s, size_t i) -> const Backend& { return placed.empty() ? *host_ : *placed[s][i]; };
  // Times are for the observer; a plain run reads no clock.
  const auto now = [observer] { return observer ? clock::now() : clock::time_point{}; };
  const auto since = [observer](clock::time_point start) { return observer ? seconds_since(start) : 0.0; };
  auto in_format = [&](size_t s, size_t i) { return !streams[s].computes_in_format.empty() && streams[s].computes_in_format[i]; };
  // A value of slot `slot` as a node on `at` storing in `storage` reads it (`narrow_doubles`: it computes in
  // the stream's target format): converted where it lives, then moved.
  auto read_slot = [&](size_t s, int slot, Format storage, bool narrow_doubles, const Backend& at,
                       bool fp8_absmax_scaling) -> const Tensor* {
    StreamValues& table = tables[s];
    const Tensor& value = table.values[size_t(slot)];
    const Format have = table.format[size_t(slot)];
    // An FP32 consumer reads narrower values exactly as they are (float64 ones too, unless it computes in a
    // target format, which narrows them even where it stores as FP32, TF32); anything else needs them on its
    // own grid.
    const bool narrowing = narrow_doubles && value.dtype() == DType::Float64 && storage != Format::FP64;
    const bool as_they_are = !narrowing && (have == storage || (storage == Format::FP32 && have != Format::FP64));
    if (as_they_are && value.device() == at.device()) return &value;
    const auto key = std::make_tuple(slot, as_they_are ? kAsStored : static_cast<int>(storage), at.device());
    auto c = table.copies.find(key);
    if (c == table.copies.end()) {
      Tensor copy = value;
      if (!as_they_are) {
        const Backend& where = backend_of(value.device());
        const bool scaled = absmax_scaled(storage, fp8_absmax_scaling);
        copy = where.convert(value, storage, scaled ? absmax_scale(storage, where.absmax(value)) : 1);
      }
      c = table.copies.emplace(key, move_to(copy, at)).first;
    }
    return &c->second;
  };
  // A value the run's table does not hold (an initializer, an enclosing scope's value) as a node on `at` reads it.
  auto moved_to = [&](size_t s, const Tensor* t, const Backend& at) -> const Tensor* {
    if (t->device() == at.device()) return t;
    const auto key = std::make_pair(t, at.device());
    auto m = tables[s].outer_copies.find(key);
    if (m == tables[s].outer_copies.end()) m = tables[s].outer_copies.emplace(key, move_to(*t, at)).first;
    return &m->second;
  };
  auto lookup = [&](size_t s, const std::string& name, Format storage, bool narrow_doubles,
                    const Backend& at) -> const Tensor* {
    auto slot = slot_of_.find(name);
    if (slot != slot_of_.end() && tables[s].values[size_t(slot->second)].defined())
      return read_slot(s, slot->second, storage, narrow_doubles, at, streams[s].fp8_absmax_scaling);
    auto init = graph_->initializers.find(name);
    if (init == graph_->initializers.end()) {
      const Tensor* enclosing = outer ? (*outer)(name) : nullptr;
      return enclosing ? moved_to(s, enclosing, at) : nullptr;
    }
    return resident(initializers_in(storage, narrow_doubles, streams[s].fp8_absmax_scaling).at(name), at);
  };

  std::vector<StreamStep> steps(streams.size());
  std::vector<Tensor> results;  // a node's outputs, reused node after node
  // Host copies of what a node on a device read and wrote, for an observer that reads only host tensors or a
  // device that does not compute probes.
  std::vector<std::vector<Tensor>> host_copies_in(placed.empty() || !observer ? 0 : streams.size());
  std::vector<std::vector<Tensor>> host_copies_out(host_copies_in.size());
  // What each stream's scope reads with at the running node; the lookups capture a pointer to it, small
  // enough for std::function to hold without allocating, and are made once per run, not per node. Scopes
  // resolve to host tensors: the observer reads them, and subgraph runs move what their nodes read.
  struct ScopeAt {
    size_t stream;
    Format storage;
    bool narrow;
    const Backend* runs_on;  // where the isolated run of the running node reads the first stream's values
  };
  std::vector<ScopeAt> scope_at(streams.size());
  std::vector<ScopeLookup> scopes;
  for (size_t s = 0; s < streams.size(); ++s)
    scopes.emplace_back([this, &lookup, at = &scope_at[s]](const std::string& name) {
      return lookup(at->stream, name, at->storage, at->narrow, *host_);
    });
  // For the observer's isolated runs: the first stream's values as another stream's running node reads them,
  // converted to its format (with its FP8 scaling) on the host, each once per value and format and freed
  // with the value. Names of enclosing scopes are converted likewise and kept for the run.
  std::map<std::pair<std::string, Format>, Tensor> outer_as_read;
  const auto reference_as_read = [&](size_t s, const std::string& name) -> const Tensor* {
    const ScopeAt& at = scope_at[s];
    auto slot = slot_of_.find(name);
    if (slot != slot_of_.end() && tables[0].values[size_t(slot->second)].defined())
      return read_slot(0, slot->second, at.storage, at.narrow, *at.runs_on, streams[s].fp8_absmax_scaling);
    if (graph_->initializers.count(name))
      return resident(initializers_in(at.storage, at.narrow, streams[s].fp8_absmax_scaling).at(name), *at.runs_on);
    const Tensor* enclosing = outer ? (*outer)(name) : nullptr;
    if (!enclosing) return nullptr;
    auto c = outer_as_read.find({name, at.storage});
    if (c == outer_as_read.end())
      c = outer_as_read.emplace(std::make_pair(name, at.storage), host_->convert(move_to(*enclosing, *host_), at.storage, 1)).first;
    return &c->second;
  };
  // A plain run folds constant nodes (foldable_): the session's own settings, no feed standing for a constant,
  // and, in a subgraph run, an enclosing run that folds too (its constants are this graph's outer constants).
  const StreamPlan& first = streams.front();
  const bool folding =
      t_constants_hold && !observer && streams.size() == 1 && first.node_config.empty() && first.reused.empty() &&
      first.computes_in_format.empty() && !first.fp8_absmax_scaling && !first.output_scale &&
      std::none_of(feeds.begin(), feeds.end(), [&](const auto& f) { return constants_.count(f.first); });
  const ConstantsHold nested_runs(folding);
  // The Muls that run their SiLU's Swish in this run (silu_): both nodes on the CPU in float32.
  std::vector<char> silu_now(folding && !silu_.empty() ? graph_->nodes.size() : 0);
  const auto float32_on_host = [&](size_t s, size_t i) {
    return config_of(s, i).storage == Format::FP32 && !in_format(s, i) && &backend_at(s, i) == host_;
  };
  // The readers that run as epilogues of their producer in this run (epilogue_chains_).
  std::vector<char> fused_now(folding && !epilogue_chains_.empty() ? graph_->nodes.size() : 0);
  // A chain reader's inputs other than the chain's value, where all are on the host now.
  const auto inputs_at_hand = [&](size_t s, const EpilogueLink& link) -> std::optional<std::vector<const Tensor*>> {
    const Node& node = graph_->nodes[link.node];
    const NodeSlots& slots = node_slots_[link.node];
    std::vector<const Tensor*> inputs(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (k == link.from || node.inputs[k].empty()) continue;
      const int slot = slots.inputs[k];
      const Tensor* t = slot >= 0 && tables[s].values[size_t(slot)].defined() ? &tables[s].values[size_t(slot)]
                                                                              : slots.initializers[k];
      if (!t || !t->device().is_host()) return std::nullopt;
      inputs[k] = t;
    }
    return inputs;
  };
  std::vector<ScopeLookup> references_as_read;
  for (size_t s = 0; s < (observer ? streams.size() : 0); ++s)
    references_as_read.emplace_back([&reference_as_read, s](const std::string& name) { return reference_as_read(s, name); });
  for (size_t i = 0; i < graph_->nodes.size(); ++i) {
    const Node& node = graph_->nodes[i];
    try {
      const NodeSlots& slots = node_slots_[i];
      const NvtxRange node_range(node.name.c_str());
      for (size_t s = 0; s < streams.size(); ++s) {
        if (!streams[s].reused.empty() && streams[s].reused[i]) {
          const RunRecord& from = *streams[s].reuse;
          for (const int slot : slots.outputs)
            if (slot >= 0)
              put_slot(s, slot, from.values[size_t(slot)], from.format[size_t(slot)],
                       from.boxed.empty() ? nullptr : from.boxed[size_t(slot)]);
          continue;
        }
        const ExecConfig& config = config_of(s, i);
        const bool folds = folding && foldable_[i];
        if (folds) {
          std::lock_guard<std::mutex> lock(folded_mutex_);
          if (auto f = folded_.find(i); f != folded_.end()) {
            for (size_t k = 0; k < node.outputs.size(); ++k)
              if (const int slot = slots.outputs[k]; slot >= 0)
                put_slot(s, slot, f->second[k], config.storage, nullptr);
            continue;
          }
        }
        if (!fused_now.empty() && fused_now[i]) continue;  // ran as an epilogue of its producer
        if (!silu_now.empty() && silu_mul_of_[i] >= 0) {
          const size_t mul = static_cast<size_t>(silu_mul_of_[i]);
          const Tensor* x = slots.inputs[0] >= 0 ? &tables[s].values[size_t(slots.inputs[0])] : nullptr;
          if (x && x->defined() && x->dtype() == DType::Float32 && x->device().is_host() && float32_on_host(s, i) &&
              float32_on_host(s, mul)) {
            silu_now[mul] = true;
            continue;
          }
        }
        const Silu* silu = !silu_now.empty() && silu_now[i] ? &silu_.at(i) : nullptr;
        const Backend& runs_on = backend_at(s, i);
        const NvtxRange stream_range(format_name(format_of(config)).data());
        const bool narrow = in_format(s, i);
        StreamStep& step = steps[s];
        const auto reading = now();
        step.inputs.clear();
        for (size_t k = 0; k < node.inputs.size(); ++k) {
          if (silu && k != silu->x) continue;  // the Swish reads x only
          const std::string& name = node.inputs[k];
          const int slot = slots.inputs[k];
          const Backend& at = reader_of(i, k, runs_on);
          const Tensor* t = name.empty() ? nullptr
                            : slot >= 0 && tables[s].values[size_t(slot)].defined()
                                ? read_slot(s, slot, config.storage, narrow, at, streams[s].fp8_absmax_scaling)
                            : slots.initializers[k] && config.storage == Format::FP32 && !narrow
                                ? resident(*slots.initializers[k], at)
                                : lookup(s, name, config.storage, narrow, at);
          if (!name.empty() && !t) {
            ValuePtr value = boxed_of(s, slot, name);
            if (!value) fail(node.label() + ": input '" + name + "' has no value");
            node_values[s].inputs.resize(node.inputs.size());
            node_values[s].inputs[k] = std::move(value);
          }
          step.inputs.push_back(t);
        }
        if (!tables[s].boxed.empty() || value_feeds)
          for (const std::string& name : node.implicit_inputs) {
            auto slot = slot_of_.find(name);
            if (ValuePtr value = boxed_of(s, slot == slot_of_.end() ? -1 : slot->second, name))
              node_values[s].scope.emplace(name, std::move(value));
          }
        step.convert_seconds = since(reading);
        const bool device_views = observer && observer->reads_device_tensors() && runs_on.computes_probes();
        scope_at[s] = {s, config.storage, narrow, device_views ? &runs_on : host_};
        ChainEpilogues epilogues;
        const std::vector<EpilogueLink>* chain = nullptr;
        if (!fused_now.empty() && float32_on_host(s, i))
          if (const auto c = epilogue_chains_.find(i); c != epilogue_chains_.end()) {
            chain = &c->second;
            for (const EpilogueLink& link : *chain) {
              std::optional<std::vector<const Tensor*>> inputs;
              if (!float32_on_host(s, link.node) || !(inputs = inputs_at_hand(s, link))) break;
              epilogues.add(*kernels_[link.node], link.from, std::move(*inputs));
            }
          }
        const auto running = now();
        if (silu)
          run_kernel(runs_on, silu->swish, *silu->kernel, step.inputs, results, config, nullptr, nullptr,
                     &node_values[s]);
        else
          run_on(runs_on, i, step.inputs, results, config, node.implicit_inputs.empty() ? nullptr : &scopes[s],
                 observer ? observer->subgraphs(i, s) : nullptr, &node_values[s],
                 epilogues.empty() ? nullptr : &epilogues);
        // Output 0 is the last epilogue's node's.
        const size_t fused = chain ? epilogues.fused() : 0;
        for (size_t c = 0; c < fused; ++c) fused_now[(*chain)[c].node] = true;
        if (stats) stats->epilogue_nodes += fused;
        step.run_seconds = since(running);
        step.device_seconds =
            observer && observer->wants_device_time() ? runs_on.last_run_device_seconds() : std::nullopt;
        const auto storing = now();
        if (config.storage != Format::FP32 || narrow)
          for (size_t o = 0; o < results.size(); ++o)
            if (results[o].defined())
              runs_on.store_in_format(results[o], config.storage,
                                      streams[s].output_scale ? streams[s].output_scale(i, o) : 1);
        step.convert_seconds += since(storing);
        // Outputs of tensors only (a node meeting sequences or optionals is not kept), the same in every run, kept
        // within a share of the memory budget: a kept value outlives its last reader, which a run that fits the
        // budget without folding must still fit with it.
        if (folds && node_values[s].inputs.empty() && node_values[s].outputs.empty()) {
          int64_t bytes = 0;
          for (const Tensor& t : results) bytes += t.defined() ? static_cast<int64_t>(t.nbytes()) : 0;
          std::lock_guard<std::mutex> lock(folded_mutex_);
          if (folded_bytes_ + bytes <= memory_budget::limit() / kFoldedShareOfBudget) {
            folded_bytes_ += bytes;
            folded_.emplace(i, results);
          }
        }
        step.outputs.assign(node.outputs.size(), nullptr);
        for (size_t k = 0; k < node.outputs.size(); ++k)
          if (const int slot = k == 0 && fused ? node_slots_[(*chain)[fused - 1].node].outputs[0] : slots.outputs[k];
              slot >= 0) {
            ValuePtr boxed = k < node_values[s].outputs.size() ? std::move(node_values[s].outputs[k]) : nullptr;
            // A sequence/optional output is not shown as a tensor: the observer sees it as not named.
            if (!boxed) step.outputs[k] = &tables[s].values[size_t(slot)];
            put_slot(s, slot, std::move(results[k]), config.storage, std::move(boxed));
          }
        node_values[s].clear();
        if (!host_copies_in.empty() && !runs_on.device().is_host() && !device_views) {
          const auto on_host = [&](std::vector<const Tensor*>& views, std::vector<Tensor>& copies) {
            copies.resize(views.size());
            for (size_t k = 0; k < views.size(); ++k)
              if (views[k]) views[k] = &(copies[k] = move_to(*views[k], *host_));
          };
          on_host(step.inputs, host_copies_in[s]);
          on_host(step.outputs, host_copies_out[s]);
        }
        step.config = &config;
        step.backend = &runs_on;
        step.scope = observer ? &scopes[s] : nullptr;
        step.reference_as_read = observer && s > 0 ? &references_as_read[s] : nullptr;
        if (s == 0 && observer) observer->after_first(i, step);
      }
      if (observer) observer->node_done(i, steps);
      if (stats) {
        size_t live = 0, bytes = 0;
        for (const Tensor& t : tables.front().values) {
          live += t.defined();
          bytes += t.defined() ? t.nbytes() : 0;
        }
        stats->peak_live_values = std::max(stats->peak_live_values, live);
        stats->peak_live_bytes = std::max(stats->peak_live_bytes, bytes);
      }
      for (StreamValues& table : tables)
        for (const int slot : slots.release) {
          table.values[size_t(slot)] = Tensor();
          table.drop_copies(slot);
          if (!table.boxed.empty()) table.boxed[size_t(slot)] = nullptr;
        }
    } catch (...) {
      rethrow_naming(node);
    }
  }
  std::vector<TensorMap> outputs(streams.size());
  if (value_outputs) value_outputs->assign(streams.size(), {});
  for (size_t s = 0; s < streams.size(); ++s)
    for (const auto& out : graph_->outputs) {
      auto slot = slot_of_.find(out.name);
      const bool produced = slot != slot_of_.end() && tables[s].values[size_t(slot->second)].defined();
      if (!produced)
        if (ValuePtr value = boxed_of(s, slot == slot_of_.end() ? -1 : slot->second, out.name)) {
          if (!value_outputs)
            fail("graph output '" + out.name + "' is " + value->describe() +
                 ", which the audit does not compare (tensor outputs only; mpaudit run saves it)");
          (*value_outputs)[s].emplace(out.name, std::move(value));
          continue;
        }
      const Tensor* t = produced ? &tables[s].values[size_t(slot->second)] : lookup(s, out.name, Format::FP32, false, *host_);
      if (!(t != nullptr)) fail("graph output '" + out.name + "' has no value");
      outputs[s].emplace(out.name, move_to(*t, *host_));
    }
  for (const Backend* backend : {requested_, host_}) backend->synchronize();
  return outputs;
}

}  // namespace mpa
