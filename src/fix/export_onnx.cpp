// [SECTION] Names: mpaudit's names for unnamed nodes, and new names that collide with nothing
// [SECTION] Tensors: float32 -> target conversion that refuses to overflow or flush
// [SECTION] Which nodes compute in the target format
// [SECTION] The rewrite: initializers, attributes, Casts at island borders, inputs/outputs, value_info
#include "fix/export_onnx.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "common/error.h"
#include "common/memory_budget.h"
#include "model/loader.h"

namespace mpa::fix {

namespace fs = std::filesystem;

namespace {

using onnx::TensorProto;

// [SECTION] Names

// The loader's rule (model/loader.cpp): "<op_type>_<index in file order>", in every graph.
void name_unnamed_nodes(onnx::GraphProto& graph) {
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto& node = *graph.mutable_node(i);
    if (node.name().empty()) node.set_name(node.op_type() + "_" + std::to_string(i));
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (a.has_g()) name_unnamed_nodes(*a.mutable_g());
      for (onnx::GraphProto& g : *a.mutable_graphs()) name_unnamed_nodes(g);
    }
  }
}

class Names {
 public:
  explicit Names(const onnx::GraphProto& graph) { collect(graph); }
  // `base` itself when free, else "<base>_<n>" for the first free n: the same model gives the same names.
  std::string unique(const std::string& base) {
    std::string name = base;
    for (int n = 1; taken_.count(name); ++n) name = base + "_" + std::to_string(n);
    taken_.insert(name);
    return name;
  }

 private:
  void collect(const onnx::GraphProto& g) {
    for (const auto& v : g.input()) taken_.insert(v.name());
    for (const auto& v : g.output()) taken_.insert(v.name());
    for (const auto& t : g.initializer()) taken_.insert(t.name());
    for (const auto& n : g.node()) {
      taken_.insert(n.name());
      for (const auto& v : n.output()) taken_.insert(v);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect(a.g());
        for (const auto& sub : a.graphs()) collect(sub);
      }
    }
  }
  std::set<std::string> taken_;
};

// Values a subgraph reads from enclosing scopes, with every place that reads them (for renaming).
void free_reads(onnx::GraphProto& g, std::set<std::string> defined,
                std::map<std::string, std::vector<std::string*>>& reads) {
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node())
    for (const auto& v : n.output()) defined.insert(v);
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (std::string& v : *n.mutable_input())
      if (!v.empty() && !defined.count(v)) reads[v].push_back(&v);
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) free_reads(*a.mutable_g(), defined, reads);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) free_reads(sub, defined, reads);
    }
  }
  for (onnx::ValueInfoProto& v : *g.mutable_output())
    if (!defined.count(v.name())) reads[v.name()].push_back(v.mutable_name());
}

bool has_subgraph(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

// [SECTION] Tensors

struct Converted {
  std::string raw;         // little-endian 16-bit codes
  int64_t overflowed = 0;  // finite elements that become infinite
  int64_t flushed = 0;     // nonzero elements that become zero
};

Converted convert_floats(const float* data, int64_t n, Format target) {
  std::vector<uint16_t> codes(static_cast<size_t>(n));
  std::vector<float> back(static_cast<size_t>(n));
  if (target == Format::FP16) {
    floats_to_half(data, codes.data(), n);
    halves_to_float(codes.data(), back.data(), n);
  } else {
    floats_to_bfloat16(data, codes.data(), n);
    bfloat16s_to_float(codes.data(), back.data(), n);
  }
  Converted c;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(data[i]) && std::isinf(back[i])) ++c.overflowed;
    if (data[i] != 0.f && back[i] == 0.f) ++c.flushed;
  }
  c.raw.resize(codes.size() * sizeof(uint16_t));
  std::memcpy(c.raw.data(), codes.data(), c.raw.size());  // the build targets little-endian machines only
  return c;
}

// Why a float32 tensor cannot be converted ("" when it can), with the number of offending elements.
std::string unrepresentable(const Converted& c, int64_t* elements) {
  if (c.overflowed) {
    *elements = c.overflowed;
    return "overflow";
  }
  if (c.flushed) {
    *elements = c.flushed;
    return "underflow";
  }
  return "";
}

TensorProto target_tensor(const TensorProto& like, const std::string& name, const Converted& c, int32_t elem_type) {
  TensorProto t;
  t.set_name(name);
  t.mutable_dims()->CopyFrom(like.dims());
  t.set_data_type(elem_type);
  t.set_raw_data(c.raw);
  return t;
}

// [SECTION] Which nodes compute in the target format

// Ops whose float inputs or outputs the ONNX schema fixes to float32, and why.
const std::map<std::string, std::string> kFloat32OnlyOps = {
    {"QuantizeLinear", "quantization op: its scale is float32 by schema"},
    {"DequantizeLinear", "quantization op: its scale is float32 by schema"},
    {"DynamicQuantizeLinear", "quantization op: float32 only by schema"},
    {"NonMaxSuppression", "its boxes and scores are float32 by schema"},
    {"TfIdfVectorizer", "its output is float32 by schema"},
};

// Inputs whose type the ONNX schema fixes to float32 whatever the node's data type.
bool input_follows_node(const onnx::NodeProto& node, int slot) {
  if (node.op_type() == "Resize") return slot == 0;  // roi and scales are float32 in every opset
  if (node.op_type() == "Upsample") return slot == 0;
  return true;
}

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// The float32 values of a Constant / ConstantOfShape attribute, or nullopt when it holds none.
std::optional<std::vector<float>> constant_floats(const onnx::NodeProto& node, const fs::path& base_dir) {
  for (const auto& a : node.attribute()) {
    if (a.name() == "value_float") return std::vector<float>{a.f()};
    if (a.name() == "value_floats") return std::vector<float>(a.floats().begin(), a.floats().end());
    if (a.name() == "value" && a.t().data_type() == TensorProto::FLOAT) {
      const Tensor t = tensor_from_proto(a.t(), base_dir, "node '" + node.name() + "' value");
      return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
    }
  }
  return std::nullopt;
}

// Why `node` must stay FP32 even outside the requested set ("" when it can compute in the target format).
std::string forced_fp32_reason(const onnx::NodeProto& node, const fs::path& base_dir, Format target) {
  const std::string format(format_name(target));
  if (has_subgraph(node)) return "has subgraphs: If/Loop/Scan bodies are exported in fp32";
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return "op of domain '" + node.domain() + "': its " + format + " type constraints are not known here";
  const auto float32_only = kFloat32OnlyOps.find(node.op_type());
  if (float32_only != kFloat32OnlyOps.end()) return float32_only->second;
  if (node.op_type() == "Constant" && find_attribute(node, "sparse_value")) return "sparse Constant value";
  if (node.op_type() == "Constant" || node.op_type() == "ConstantOfShape") {
    if (const auto values = constant_floats(node, base_dir)) {
      int64_t elements = 0;
      const std::string why =
          unrepresentable(convert_floats(values->data(), static_cast<int64_t>(values->size()), target), &elements);
      if (!why.empty())
        return "its value would " + std::string(why == "overflow" ? "overflow" : "flush to zero") + " in " + format +
               " (" + std::to_string(elements) + " elements)";
    }
  }
  return "";
}

// [SECTION] The rewrite

class Exporter {
 public:
  Exporter(onnx::ModelProto& model, const fs::path& base_dir, const std::set<std::string>& fp32_nodes,
           const std::set<std::string>& float32_values, const ExportOptions& options)
      : graph_(*model.mutable_graph()),
        base_dir_(base_dir),
        float32_values_(float32_values),
        options_(options),
        target_elem_(options.target == Format::FP16 ? TensorProto::FLOAT16 : TensorProto::BFLOAT16),
        format_(format_name(options.target)),
        names_(graph_) {
    decide_nodes(fp32_nodes);
  }

  ExportResult run() {
    collect_reads();
    convert_initializers();
    for (int i = 0; i < graph_.node_size(); ++i)
      if (in_target_[static_cast<size_t>(i)]) retype_attributes(*graph_.mutable_node(i));
    route_graph_outputs();
    route_node_inputs();
    route_subgraph_reads();
    retype_graph_inputs_and_value_info();
    insert_casts();
    for (bool t : in_target_) ++(t ? result_.nodes_in_target : result_.nodes_in_fp32);
    return result_;
  }

 private:
  struct Read {
    int node, slot;     // the reading node (top-level index) and its input slot
    bool follows_node;  // the slot takes the node's data type (not float32 by schema)
  };

  void decide_nodes(const std::set<std::string>& fp32_nodes) {
    for (const onnx::NodeProto& node : graph_.node()) {
      bool target = !fp32_nodes.count(node.name());
      if (target) {
        const std::string why = forced_fp32_reason(node, base_dir_, options_.target);
        if (!why.empty()) {
          result_.nodes_kept_fp32.push_back({node.name(), node.op_type(), why});
          target = false;
        }
      }
      in_target_.push_back(target);
    }
  }

  bool is_float32_value(const std::string& v) const { return float32_values_.count(v) > 0; }
  bool is_float32_initializer(const std::string& v) const { return float_initializers_.count(v) > 0; }

  void collect_reads() {
    for (int i = 0; i < graph_.initializer_size(); ++i)
      if (graph_.initializer(i).data_type() == TensorProto::FLOAT)
        float_initializers_[graph_.initializer(i).name()] = i;
    for (int i = 0; i < graph_.node_size(); ++i) {
      const onnx::NodeProto& node = graph_.node(i);
      for (int k = 0; k < node.input_size(); ++k)
        if (!node.input(k).empty()) reads_[node.input(k)].push_back({i, k, input_follows_node(node, k)});
      for (const std::string& v : node.output()) producer_[v] = i;
      if (has_subgraph(node)) {
        onnx::NodeProto& owner = *graph_.mutable_node(i);
        for (onnx::AttributeProto& a : *owner.mutable_attribute()) {
          if (a.has_g()) free_reads(*a.mutable_g(), {}, subgraph_reads_);
          for (onnx::GraphProto& sub : *a.mutable_graphs()) free_reads(sub, {}, subgraph_reads_);
        }
      }
    }
  }

  // Converts what target-format nodes read; an initializer that cannot be converted stays float32 and its
  // target-format readers move to FP32 (which changes no other initializer's readers' needs in kind).
  void convert_initializers() {
    for (const auto& [name, index] : float_initializers_) {
      std::vector<int> target_readers;
      for (const Read& r : reads_[name])
        if (wants_target(r)) target_readers.push_back(r.node);
      if (target_readers.empty()) continue;
      const TensorProto& proto = graph_.initializer(index);
      const Tensor values = tensor_from_proto(proto, base_dir_, "initializer '" + name + "'");
      Converted c = convert_floats(values.data<float>(), values.numel(), options_.target);
      InitializerKeptFp32 kept{name, "", 0, {}};
      kept.reason = unrepresentable(c, &kept.elements);
      if (!kept.reason.empty()) {
        for (int n : target_readers) {
          if (!in_target_[static_cast<size_t>(n)]) continue;
          in_target_[static_cast<size_t>(n)] = false;
          kept.consumers.push_back(graph_.node(n).name());
          result_.nodes_kept_fp32.push_back({graph_.node(n).name(), graph_.node(n).op_type(),
                                             "reads initializer '" + name + "', which would " +
                                                 (kept.reason == "overflow" ? "overflow" : "flush to zero") + " in " +
                                                 format_});
        }
        result_.initializers_kept_fp32.push_back(std::move(kept));
        continue;
      }
      converted_[name] = std::move(c);
    }
    // Readers may have moved to FP32 above: only now is it known who reads which format.
    for (auto& [name, c] : converted_) {
      bool fp32_readers = subgraph_reads_.count(name) > 0, target_readers = false;
      for (const Read& r : reads_[name]) (wants_target(r) ? target_readers : fp32_readers) = true;
      if (!target_readers) continue;
      TensorProto& proto = *graph_.mutable_initializer(float_initializers_.at(name));
      const std::string& initializer = name;  // a structured binding cannot be captured in C++17
      const bool listed_as_input = std::any_of(graph_.input().begin(), graph_.input().end(),
                                               [&](const auto& in) { return in.name() == initializer; });
      ++result_.initializers_converted;
      if (!fp32_readers) {
        proto = target_tensor(proto, name, c, target_elem_);
        in_place_.insert(name);
        continue;
      }
      const std::string copy = names_.unique(name + "_" + format_);
      *graph_.add_initializer() = target_tensor(proto, copy, c, target_elem_);
      if (listed_as_input) add_tensor_value(*graph_.add_input(), copy, target_elem_, proto);
      copy_of_[name] = copy;
    }
    // Initializers left float32 and held outside: written inline, since the export is one file.
    for (TensorProto& proto : *graph_.mutable_initializer())
      if (proto.data_location() == TensorProto::EXTERNAL) {
        const Tensor t = tensor_from_proto(proto, base_dir_, "initializer '" + proto.name() + "'");
        proto.clear_external_data();
        proto.set_data_location(TensorProto::DEFAULT);
        proto.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
      }
  }

  static void add_tensor_value(onnx::ValueInfoProto& v, const std::string& name, int32_t elem,
                               const TensorProto& like) {
    v.set_name(name);
    auto& tensor = *v.mutable_type()->mutable_tensor_type();
    tensor.set_elem_type(elem);
    for (int64_t d : like.dims()) tensor.mutable_shape()->add_dim()->set_dim_value(d);
  }

  bool wants_target(const Read& r) const { return r.follows_node && in_target_[static_cast<size_t>(r.node)]; }

  // Where a non-initializer float32 value is stored: the target format when a target-format node computes
  // it, or when it is a graph input and the I/O types follow the target.
  bool stored_in_target(const std::string& v) const {
    const auto p = producer_.find(v);
    if (p == producer_.end()) return !options_.keep_io_types;
    return in_target_[static_cast<size_t>(p->second)];
  }

  void set_attribute_tensor(onnx::NodeProto& node, const std::string& name, const TensorProto& t) {
    for (int i = 0; i < node.attribute_size(); ++i)
      if (node.attribute(i).name() == "value_float" || node.attribute(i).name() == "value_floats" ||
          node.attribute(i).name() == name)
        node.mutable_attribute()->DeleteSubrange(i--, 1);
    onnx::AttributeProto& a = *node.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::TENSOR);
    *a.mutable_t() = t;
  }

  void set_dtype(onnx::NodeProto& node, const char* attribute, bool add_when_absent) {
    for (onnx::AttributeProto& a : *node.mutable_attribute())
      if (a.name() == attribute) {
        if (a.i() == TensorProto::FLOAT) a.set_i(target_elem_);
        return;
      }
    if (!add_when_absent) return;
    onnx::AttributeProto& a = *node.add_attribute();
    a.set_name(attribute);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(target_elem_);
  }

  // Ops whose output type comes from an attribute: made to produce the target type where they produced
  // float32.
  void retype_attributes(onnx::NodeProto& node) {
    const std::string& op = node.op_type();
    const bool float_out = node.output_size() > 0 && is_float32_value(node.output(0));
    if (!float_out) return;
    if (op == "Cast")
      set_dtype(node, "to", false);
    else if (op == "EyeLike" || op == "RandomNormalLike" || op == "RandomUniformLike" || op == "Bernoulli")
      set_dtype(node, "dtype", false);
    else if (op == "RandomNormal" || op == "RandomUniform")
      set_dtype(node, "dtype", true);
    else if (op == "Constant" || op == "ConstantOfShape") {
      const std::vector<float> values = constant_floats(node, base_dir_).value_or(std::vector<float>{0.f});
      TensorProto like;
      if (const onnx::AttributeProto* a = find_attribute(node, "value"))
        like.mutable_dims()->CopyFrom(a->t().dims());
      else if (find_attribute(node, "value_floats"))
        like.add_dims(static_cast<int64_t>(values.size()));
      else if (op == "ConstantOfShape")
        like.add_dims(1);
      const Converted c = convert_floats(values.data(), static_cast<int64_t>(values.size()), options_.target);
      set_attribute_tensor(node, "value", target_tensor(like, "", c, target_elem_));
    }
  }

  // The name under which `v` can be read in the wanted format: itself, or a Cast of it made once.
  std::string read_as(const std::string& v, bool target) {
    if (is_float32_initializer(v)) {
      if (!target || in_place_.count(v)) return v;
      const auto copy = copy_of_.find(v);
      return copy != copy_of_.end() ? copy->second : v;
    }
    if (!is_float32_value(v) || stored_in_target(v) == target) return stored_name(v);
    const auto key = std::make_pair(v, target);
    const auto done = casts_.find(key);
    if (done != casts_.end()) return done->second.output(0);
    onnx::NodeProto cast;
    const std::string name = names_.unique(v + "_to_" + (target ? format_ : std::string("fp32")));
    cast.set_name(name);
    cast.set_op_type("Cast");
    cast.add_input(stored_name(v));
    cast.add_output(name);
    onnx::AttributeProto& to = *cast.add_attribute();
    to.set_name("to");
    to.set_type(onnx::AttributeProto::INT);
    to.set_i(target ? target_elem_ : TensorProto::FLOAT);
    return casts_.emplace(key, std::move(cast)).first->second.output(0);
  }

  std::string stored_name(const std::string& v) const {
    const auto renamed = renamed_.find(v);
    return renamed == renamed_.end() ? v : renamed->second;
  }

  // A graph output stored in the other format than its declared one is written under a new name by its
  // producer, and a Cast gives it its declared name and type.
  void route_graph_outputs() {
    for (onnx::ValueInfoProto& out : *graph_.mutable_output()) {
      const std::string v = out.name();
      if (!is_float32_value(v) || is_float32_initializer(v)) continue;
      const bool declared_target = !options_.keep_io_types;
      if (declared_target) out.mutable_type()->mutable_tensor_type()->set_elem_type(target_elem_);
      const auto p = producer_.find(v);
      if (p == producer_.end() || stored_in_target(v) == declared_target) continue;
      const std::string stored = names_.unique(v + "_" + (stored_in_target(v) ? format_ : std::string("fp32")));
      for (std::string& o : *graph_.mutable_node(p->second)->mutable_output())
        if (o == v) o = stored;
      renamed_[v] = stored;
      onnx::NodeProto cast;
      cast.set_name(names_.unique(stored + "_to_" + (declared_target ? format_ : std::string("fp32"))));
      cast.set_op_type("Cast");
      cast.add_input(stored);
      cast.add_output(v);
      onnx::AttributeProto& to = *cast.add_attribute();
      to.set_name("to");
      to.set_type(onnx::AttributeProto::INT);
      to.set_i(declared_target ? target_elem_ : TensorProto::FLOAT);
      output_casts_.emplace(v, std::move(cast));
    }
  }

  void route_node_inputs() {
    for (auto& [v, reads] : reads_)
      for (const Read& r : reads) {
        const std::string name = read_as(v, wants_target(r));
        if (name != v) graph_.mutable_node(r.node)->set_input(r.slot, name);
      }
  }

  // Subgraph bodies compute in fp32: their reads of target-format values go through a Cast.
  void route_subgraph_reads() {
    for (auto& [v, places] : subgraph_reads_) {
      const std::string name = read_as(v, false);
      if (name != v)
        for (std::string* place : places) *place = name;
    }
  }

  void retype_graph_inputs_and_value_info() {
    for (onnx::ValueInfoProto& in : *graph_.mutable_input()) {
      auto& tensor = *in.mutable_type()->mutable_tensor_type();
      if (in_place_.count(in.name()) || (!options_.keep_io_types && !float_initializers_.count(in.name()) &&
                                         tensor.elem_type() == TensorProto::FLOAT))
        tensor.set_elem_type(target_elem_);
    }
    for (onnx::ValueInfoProto& vi : *graph_.mutable_value_info()) {
      if (!vi.type().has_tensor_type() || vi.type().tensor_type().elem_type() != TensorProto::FLOAT) continue;
      const std::string& v = vi.name();
      const bool target = in_place_.count(v) || (is_float32_value(v) && !renamed_.count(v) && stored_in_target(v));
      if (target) vi.mutable_type()->mutable_tensor_type()->set_elem_type(target_elem_);
    }
  }

  // Casts of graph inputs and initializers first, every other one right after its value's producer: the
  // node list stays in topological order.
  void insert_casts() {
    std::map<std::string, std::vector<onnx::NodeProto>> after;  // by producer's output value
    std::vector<onnx::NodeProto> first;
    for (auto& [key, cast] : casts_) {
      const std::string& v = key.first;
      (producer_.count(v) ? after[v] : first).push_back(std::move(cast));
    }
    for (auto& [v, cast] : output_casts_) after[v].push_back(std::move(cast));
    result_.casts_inserted = static_cast<int64_t>(casts_.size() + output_casts_.size());
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (onnx::NodeProto& c : first) *nodes.Add() = std::move(c);
    std::vector<std::vector<std::string>> produced(static_cast<size_t>(graph_.node_size()));
    for (const auto& [v, p] : producer_) produced[static_cast<size_t>(p)].push_back(v);
    for (int i = 0; i < graph_.node_size(); ++i) {
      *nodes.Add() = std::move(*graph_.mutable_node(i));
      for (const std::string& v : produced[static_cast<size_t>(i)]) {
        const auto casts = after.find(v);
        if (casts != after.end())
          for (onnx::NodeProto& c : casts->second) *nodes.Add() = std::move(c);
      }
    }
    graph_.mutable_node()->Swap(&nodes);
  }

  onnx::GraphProto& graph_;
  fs::path base_dir_;
  const std::set<std::string>& float32_values_;
  ExportOptions options_;
  int32_t target_elem_;
  std::string format_;
  Names names_;
  std::vector<bool> in_target_;
  std::map<std::string, int> float_initializers_, producer_;
  std::map<std::string, std::vector<Read>> reads_;
  std::map<std::string, std::vector<std::string*>> subgraph_reads_;
  std::map<std::string, Converted> converted_;
  std::set<std::string> in_place_;
  std::map<std::string, std::string> copy_of_, renamed_;
  std::map<std::pair<std::string, bool>, onnx::NodeProto> casts_;
  std::map<std::string, onnx::NodeProto> output_casts_;
  ExportResult result_;
};

}  // namespace

ExportResult export_mixed_precision(const fs::path& model, const std::set<std::string>& fp32_nodes,
                                    const std::set<std::string>& float32_values, const ExportOptions& options,
                                    std::string* bytes) {
  if (!(options.target == Format::FP16 || options.target == Format::BF16))
    fail("--export-onnx writes fp16 or bf16 models; the target is " + std::string(format_name(options.target)));
  const uintmax_t size = checked_file_size(model, uint64_t{4} << 30);
  memory_budget::require(model.string() + ": exporting the model", 2 * size);
  std::ifstream in(model, std::ios::binary);
  onnx::ModelProto proto;
  if (!(in && proto.ParseFromIstream(&in))) fail(model.string() + ": not an ONNX model (protobuf parsing failed)");
  if (options.target == Format::BF16) {
    int64_t opset = 0;
    for (const auto& o : proto.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    require(opset >= 13, model.string() +
                             ": --export-onnx with bf16 needs opset 13 or later (Cast to bfloat16); the "
                             "model imports opset " +
                             std::to_string(opset));
  }
  name_unnamed_nodes(*proto.mutable_graph());
  ExportResult result = Exporter(proto, model.parent_path(), fp32_nodes, float32_values, options).run();
  if (!proto.SerializeToString(bytes)) fail(model.string() + ": the exported model cannot be serialized (over 2 GB?)");
  return result;
}

}  // namespace mpa::fix
