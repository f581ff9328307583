#include "runtime/session.h"

#include <algorithm>
#include <new>
#include <set>
#include <unordered_map>

#include "backends/cpu/allocator.h"
#include "backends/cpu/parallel.h"
#include "runtime/precision.h"

namespace mpa {

namespace {

// A value brought into a storage format: onto its grid, or widened to double for FP64.
Tensor convert_to(const Tensor& t, Format storage) {
  return storage == Format::FP64 ? widen_to_double(t) : tensor_in_format(t, storage);
}

void store_in(std::vector<Tensor>& outputs, Format storage) {
  for (Tensor& t : outputs) {
    if (!t.defined()) continue;
    if (storage == Format::FP64) t = widen_to_double(t);
    else round_tensor_to_format(t, storage);
  }
}

// Prefixes a kernel's message with the node label unless the kernel already named it.
std::string with_node(const Node& node, const std::string& message) {
  const std::string label = node.label();
  return message.rfind(label, 0) == 0 ? message : label + ": " + message;
}

void collect_unsupported(const Graph& graph, std::vector<UnsupportedNode>& out) {
  const OpRegistry& registry = OpRegistry::instance();
  for (const Node& node : graph.nodes) {
    const int64_t opset = graph.opset(node.domain);
    if (opset == 0)
      out.push_back({&node, "operator domain '" + node.domain + "' of " + node.op_type + " is not imported by the model"});
    else if (!registry.find(node.domain, node.op_type, opset))
      out.push_back({&node, registry.why_unsupported(node.domain, node.op_type, opset)});
    for (const auto& [key, attribute] : node.attributes) {
      if (attribute.g) collect_unsupported(*attribute.g, out);
      for (const auto& g : attribute.graphs) collect_unsupported(*g, out);
    }
  }
}

}  // namespace

std::vector<UnsupportedNode> find_unsupported_nodes(const Graph& graph) {
  std::vector<UnsupportedNode> out;
  collect_unsupported(graph, out);
  return out;
}

Session::Session(std::shared_ptr<const Graph> graph, SessionOptions options)
    : graph_(std::move(graph)), options_(options) {
  cpu::keep_freed_tensor_memory();
  config_ = config_for(options_.precision, options_.accumulation, options_.profile, options_.threads);
  for (const auto& [name, format] : options_.node_precision) {
    const bool known = std::any_of(graph_->nodes.begin(), graph_->nodes.end(), [&](const Node& n) { return n.name == name; });
    if (!(known)) fail("no node named '" + name + "' to set the precision of");
    if (!((format == Format::FP64) == (options_.precision == Format::FP64)))
      fail("fp64 runs the whole graph: it cannot be mixed with other formats (node '" + name + "')");
  }
  for (const Node& node : graph_->nodes) {
    ExecConfig c = config_;
    auto it = options_.node_precision.find(node.name);
    if (it != options_.node_precision.end()) c = config_for(it->second, c.accumulation, c.profile, c.threads);
    node_configs_.push_back(c);
    if (c.storage != Format::FP32 && !initializers_by_format_.count(c.storage)) {
      auto& converted = initializers_by_format_[c.storage];
      for (const auto& [name, t] : graph_->initializers) converted.emplace(name, convert_to(t, c.storage));
    }
  }
  const auto unsupported = find_unsupported_nodes(*graph_);
  if (!unsupported.empty()) fail(unsupported.front().node->label() + ": " + unsupported.front().reason);
  const OpRegistry& registry = OpRegistry::instance();
  for (const Node& node : graph_->nodes) {
    const int64_t opset = graph_->opset(node.domain);
    const KernelFactory* factory = registry.find(node.domain, node.op_type, opset);
    try {
      kernels_.push_back((*factory)(OpInit(node, opset)));
    } catch (const UnsupportedType& e) {
      throw UnsupportedType(with_node(node, e.what()));
    } catch (const Error& e) {
      fail(with_node(node, e.what()));
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
}

Session::~Session() = default;

TensorMap Session::run_subgraph(const std::shared_ptr<const Graph>& graph, const TensorMap& feeds,
                                const ExecConfig& config, const ScopeLookup* scope, SubgraphObserver* observer) const {
  SessionOptions options;
  options.threads = config.threads;
  options.precision = format_of(config);
  options.accumulation = config.accumulation;
  options.profile = config.profile;
  const Session* session = nullptr;
  {
    std::lock_guard<std::mutex> lock(subgraph_mutex_);
    auto& slot = subgraph_sessions_[{graph.get(), options.precision, options.accumulation, options.profile,
                                     options.threads}];
    if (!slot) slot = std::make_unique<Session>(graph, options);
    session = slot.get();
  }
  return session->run(feeds, {}, nullptr, scope, observer);
}

void Session::check_feeds(const TensorMap& feeds) const {
  for (const ValueInfo& in : graph_->inputs) {
    auto it = feeds.find(in.name);
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

std::vector<Tensor> Session::run_node(size_t index, std::vector<const Tensor*> inputs, const ExecConfig& config,
                                      const ScopeLookup* scope, SubgraphObserver* observer) const {
  const Node& node = graph_->nodes[index];
  KernelContext ctx(node, std::move(inputs), node.outputs.size(), config);
  ctx.set_scope(scope);
  ctx.set_observer(observer);
  ctx.set_subgraphs(this);
  try {
    kernels_[index]->compute(ctx);
  } catch (const UnsupportedType& e) {
    throw UnsupportedType(with_node(node, e.what()));
  } catch (const Error& e) {
    fail(with_node(node, e.what()));
  } catch (const std::bad_alloc&) {
    fail(node.label() + ": out of memory");
  }
  for (size_t k = 0; k < node.outputs.size(); ++k)
    if (!node.outputs[k].empty() && !ctx.outputs()[k].defined())
      fail(node.label() + ": produced no value for output '" + node.outputs[k] + "'");
  return std::move(ctx.outputs());
}

TensorMap Session::run(const TensorMap& feeds, const NodeHook& hook, RunStats* stats, const ScopeLookup* outer,
                       SubgraphObserver* observer) const {
  check_feeds(feeds);
  cpu::set_num_threads(options_.threads);
  // Values live in their producer's storage format (feeds and initializers in their own); a node whose
  // format differs reads a converted copy, made once per value and format.
  std::vector<Tensor> values(slot_of_.size());
  std::vector<Format> value_format(slot_of_.size(), Format::FP32);
  std::map<std::pair<int, Format>, Tensor> converted;
  for (const auto& [name, t] : feeds) values[size_t(slot_of_.at(name))] = t;
  auto read_slot = [&](int slot, Format storage) -> const Tensor* {
    const Format have = value_format[size_t(slot)];
    // An FP32 consumer reads narrower values exactly as they are; anything else needs them on its own grid.
    if (have == storage || (storage == Format::FP32 && have != Format::FP64)) return &values[size_t(slot)];
    auto key = std::make_pair(slot, storage);
    auto c = converted.find(key);
    if (c == converted.end()) c = converted.emplace(key, convert_to(values[size_t(slot)], storage)).first;
    return &c->second;
  };
  auto lookup = [&](const std::string& name, Format storage) -> const Tensor* {
    auto slot = slot_of_.find(name);
    if (slot != slot_of_.end() && values[size_t(slot->second)].defined()) return read_slot(slot->second, storage);
    auto init = graph_->initializers.find(name);
    if (init == graph_->initializers.end()) return outer ? (*outer)(name) : nullptr;
    return storage == Format::FP32 ? &init->second : &initializers_by_format_.at(storage).at(name);
  };
  for (size_t i = 0; i < graph_->nodes.size(); ++i) {
    const Node& node = graph_->nodes[i];
    const NodeSlots& slots = node_slots_[i];
    const ExecConfig& config = node_configs_[i];
    std::vector<const Tensor*> inputs;
    inputs.reserve(node.inputs.size());
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& name = node.inputs[k];
      const int slot = slots.inputs[k];
      const Tensor* t = name.empty()                                              ? nullptr
                        : slot >= 0 && values[size_t(slot)].defined()             ? read_slot(slot, config.storage)
                        : slots.initializers[k] && config.storage == Format::FP32 ? slots.initializers[k]
                                                                                  : lookup(name, config.storage);
      if (!name.empty() && !t) fail(node.label() + ": input '" + name + "' has no value");
      inputs.push_back(t);
    }
    std::vector<Tensor> results;
    ScopeLookup scope;  // for nodes with subgraphs and for the observer; empty (no allocation) otherwise
    if (!node.implicit_inputs.empty() || observer)
      scope = [&](const std::string& name) { return lookup(name, config.storage); };
    // The observer re-reads the inputs after the node ran; they stay alive until the release below.
    const std::vector<const Tensor*> observed_inputs = observer ? inputs : std::vector<const Tensor*>{};
    results = run_node(i, std::move(inputs), config, node.implicit_inputs.empty() ? nullptr : &scope, observer);
    if (config.storage != Format::FP32) store_in(results, config.storage);
    std::vector<const Tensor*> produced(node.outputs.size(), nullptr);
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (const int slot = slots.outputs[k]; slot >= 0) {
        for (Format f : kAllFormats) converted.erase({slot, f});
        values[size_t(slot)] = std::move(results[k]);
        value_format[size_t(slot)] = config.storage;
        produced[k] = &values[size_t(slot)];
      }
    if (hook) hook(node, i, produced);
    if (observer) observer->node_done(*this, i, observed_inputs, produced, config, scope);
    if (stats) {
      size_t live = 0, bytes = 0;
      for (const Tensor& t : values) {
        live += t.defined();
        bytes += t.defined() ? t.nbytes() : 0;
      }
      stats->peak_live_values = std::max(stats->peak_live_values, live);
      stats->peak_live_bytes = std::max(stats->peak_live_bytes, bytes);
    }
    for (const int slot : slots.release) {
      values[size_t(slot)] = Tensor();
      for (Format f : kAllFormats) converted.erase({slot, f});
    }
  }
  TensorMap outputs;
  for (const auto& out : graph_->outputs) {
    auto slot = slot_of_.find(out.name);
    const bool produced = slot != slot_of_.end() && values[size_t(slot->second)].defined();
    const Tensor* t = produced ? &values[size_t(slot->second)] : lookup(out.name, Format::FP32);
    if (!(t != nullptr)) fail("graph output '" + out.name + "' has no value");
    outputs.emplace(out.name, *t);
  }
  return outputs;
}

}  // namespace mpa
