#include "model/loader.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/memory_budget.h"
#include "tensor/dispatch.h"
#include "tensor/narrow.h"

namespace mpa {

namespace fs = std::filesystem;

// [SECTION] Files

uintmax_t checked_file_size(const fs::path& path, uint64_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) fail(path.string() + ": no such file");
  if (fs::is_directory(status)) fail(path.string() + ": is a directory, not a file");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) fail(path.string() + ": cannot read size: " + ec.message());
  if (size > max_bytes) fail(path.string() + ": file of " + std::to_string(size) + " bytes exceeds the limit");
  return size;
}

std::string read_file_bytes(const fs::path& path, uint64_t max_bytes) {
  const uintmax_t size = checked_file_size(path, max_bytes);
  memory_budget::require(path.string() + ": reading the whole file", size);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string() + ": cannot open for reading");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uintmax_t>(in.gcount()) != size) fail(path.string() + ": short read");
  return bytes;
}

// [SECTION] Tensors

namespace {

template <class Field, class Store>
void copy_typed_field(const Field& field, int64_t numel, const std::string& what, Store store) {
  if (!(static_cast<int64_t>(field.size()) == numel))
    fail(what + ": holds " + std::to_string(field.size()) + " values but its shape needs " + std::to_string(numel));
  for (int64_t i = 0; i < numel; ++i) store(i, field.Get(static_cast<int>(i)));
}

struct ExternalRange {
  fs::path file;
  uint64_t offset = 0;
};

// Validates a tensor's external data reference before anything is allocated: the file must lie inside
// base_dir and hold `expected` bytes at the offset.
ExternalRange resolve_external(const onnx::TensorProto& proto, const fs::path& base_dir, const std::string& what,
                               uint64_t expected) {
  std::string location;
  uint64_t offset = 0;
  int64_t length = -1;
  for (const auto& entry : proto.external_data()) {
    try {
      if (entry.key() == "location") location = entry.value();
      else if (entry.key() == "offset") offset = std::stoull(entry.value());
      else if (entry.key() == "length") length = std::stoll(entry.value());
    } catch (const std::exception&) {
      fail(what + ": external data field '" + entry.key() + "' is not a number: '" + entry.value() + "'");
    }
  }
  if (!(!location.empty())) fail(what + ": external data has no location");
  const fs::path rel(location);
  if (!(rel.is_relative()))
    fail(what + ": external data location '" + location + "' must be relative to the model folder");
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(base_dir.empty() ? fs::path(".") : base_dir, ec);
  const fs::path file = fs::weakly_canonical(base / rel, ec);
  const auto [base_end, file_it] = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (!(!ec && base_end == base.end() && file_it != file.end()))
    fail(what + ": external data location '" + location + "' escapes the model folder");
  if (!(fs::is_regular_file(file, ec))) fail(what + ": external data file '" + location + "' not found");
  const uintmax_t file_size = fs::file_size(file, ec);
  if (!(!ec)) fail(what + ": cannot read the size of '" + location + "'");
  if (!(length < 0 || static_cast<uint64_t>(length) == expected))
    fail(what + ": external data length " + std::to_string(length) + " does not match the " + std::to_string(expected) +
         " bytes its shape needs");
  if (!(offset <= file_size && expected <= file_size - offset))
    fail(what + ": external data range of " + std::to_string(expected) + " bytes at offset " + std::to_string(offset) +
         " runs past the end of '" + location + "' (" + std::to_string(file_size) + " bytes)");
  return {file, offset};
}

void read_external(const ExternalRange& range, const std::string& what, void* dst, size_t bytes) {
  std::ifstream in(range.file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(range.offset));
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  if (!(static_cast<size_t>(in.gcount()) == bytes)) fail(what + ": short read from '" + range.file.string() + "'");
}

}  // namespace

namespace {

// A TensorProto's tensor; raw_data is moved out of `movable_raw` (the proto's own field) when given.
Tensor decode_tensor(const onnx::TensorProto& proto, std::string* movable_raw, const fs::path& base_dir,
                     const std::string& what) {
  const int32_t type = proto.data_type();
  if (!dtype_is_supported(type)) {
    if (type == 0) fail(what + ": tensor has no element type");
    throw UnsupportedType(what + ": element type " + onnx_type_name(type) + " is not supported");
  }
  if (!(!proto.has_segment())) fail(what + ": segmented tensors are not supported");
  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t numel = 0;
  try {
    numel = shape_numel(shape);  // negative dims and overflow fail here, before any allocation
  } catch (const Error& e) {
    fail(what + ": " + e.what());
  }
  const DType dtype = static_cast<DType>(type);
  const size_t elem = dtype_size(dtype);
  if (!(numel <= static_cast<int64_t>((uint64_t{1} << 62) / elem)))
    fail(what + ": shape " + shape_str(shape) + " is too large");
  // Bytes in the file: 4-bit and 2-bit types come packed and are unpacked to a byte per element.
  const size_t bytes = static_cast<size_t>(packed_bytes(dtype, numel));
  const bool packed = dtype_bits(dtype) < 8;
  auto unpacked = [&](const void* file_bytes) {
    Tensor out(dtype, shape);
    unpack_elements(dtype, static_cast<const uint8_t*>(file_bytes), static_cast<uint8_t*>(out.raw()), numel);
    return out;
  };

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    const ExternalRange range = resolve_external(proto, base_dir, what, bytes);
    memory_budget::require(what + ": its external data (" + shape_str(shape) + " of " + dtype_name(dtype) + ")", bytes);
    if (packed) {
      std::string file_bytes(bytes, '\0');
      read_external(range, what, file_bytes.data(), bytes);
      return unpacked(file_bytes.data());
    }
    Tensor out(dtype, shape);
    read_external(range, what, out.raw(), bytes);
    return out;
  }
  if (proto.has_raw_data()) {
    if (!(proto.raw_data().size() == bytes))
      fail(what + ": raw_data has " + std::to_string(proto.raw_data().size()) + " bytes but shape " + shape_str(shape) +
           " of " + dtype_name(dtype) + " needs " + std::to_string(bytes));
    if (packed) return unpacked(proto.raw_data().data());
    // Small tensors are copied: a string that short may keep its bytes inside itself, less aligned.
    if (movable_raw && bytes >= 64) return Tensor::adopt(dtype, shape, std::move(*movable_raw));
    Tensor out(dtype, shape);
    if (bytes) std::memcpy(out.raw(), proto.raw_data().data(), bytes);
    return out;
  }
  if (dtype_is_narrow(dtype)) {
    // int32_data holds one byte each: a float8 code, or a packed byte of 4-bit or 2-bit values.
    if (!(static_cast<size_t>(proto.int32_data_size()) == bytes))
      fail(what + ": holds " + std::to_string(proto.int32_data_size()) + " values but shape " + shape_str(shape) +
           " of " + dtype_name(dtype) + " needs " + std::to_string(bytes));
    std::string file_bytes(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) file_bytes[i] = static_cast<char>(proto.int32_data(static_cast<int>(i)));
    return unpacked(file_bytes.data());
  }
  // Typed fields: the element count must match before we allocate.
  int64_t available = 0;
  switch (dtype) {
    case DType::Float32: available = proto.float_data_size(); break;
    case DType::Float64: available = proto.double_data_size(); break;
    case DType::Int64: available = proto.int64_data_size(); break;
    case DType::UInt32: case DType::UInt64: available = proto.uint64_data_size(); break;
    default: available = proto.int32_data_size(); break;
  }
  if (!(available == numel))
    fail(what + ": holds " + std::to_string(available) + " values but shape " + shape_str(shape) + " needs " +
         std::to_string(numel));
  Tensor out(dtype, shape);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(out.raw());
    auto put = [&](int64_t i, auto v) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) dst[i] = T{static_cast<uint16_t>(v)};
      else dst[i] = static_cast<T>(v);
    };
    if constexpr (std::is_same_v<T, float>) copy_typed_field(proto.float_data(), numel, what, put);
    else if constexpr (std::is_same_v<T, double>) copy_typed_field(proto.double_data(), numel, what, put);
    else if constexpr (std::is_same_v<T, int64_t>) copy_typed_field(proto.int64_data(), numel, what, put);
    else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>)
      copy_typed_field(proto.uint64_data(), numel, what, put);
    else copy_typed_field(proto.int32_data(), numel, what, put);
  });
  return out;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const fs::path& base_dir, const std::string& what) {
  return decode_tensor(proto, nullptr, base_dir, what);
}

Tensor tensor_from_proto(onnx::TensorProto&& proto, const fs::path& base_dir, const std::string& what) {
  return decode_tensor(proto, proto.has_raw_data() ? proto.mutable_raw_data() : nullptr, base_dir, what);
}

Tensor load_tensor_pb(const fs::path& path, std::string* name) {
  const std::string bytes = read_file_bytes(path, uint64_t{4} << 30);
  onnx::TensorProto proto;
  if (!(proto.ParseFromString(bytes))) fail(path.string() + ": not a serialized ONNX TensorProto");
  if (name) *name = proto.name();
  return tensor_from_proto(proto, path.parent_path(), path.string());
}

// [SECTION] Graphs

namespace {

struct GraphLoader {
  fs::path base_dir;
  std::string file;
  LoadLimits limits;

  ValueInfo value_info(const onnx::ValueInfoProto& v) const {
    ValueInfo info;
    info.name = v.name();
    const auto& type = v.type();
    if (type.has_tensor_type()) {
      info.elem_type = type.tensor_type().elem_type();
      if (type.tensor_type().has_shape()) {
        info.has_shape = true;
        // A negative dim_value (older paddle2onnx exports write -1) declares a dynamic dim, as onnxruntime reads it.
        for (const auto& d : type.tensor_type().shape().dim()) {
          if (d.has_dim_value() && d.dim_value() < -1)
            fail(file + ": '" + v.name() + "' declares dimension " + std::to_string(d.dim_value()) +
                 " (negative; -1 alone is read as a dynamic dim, as older exporters write it)");
          info.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
          info.dim_params.push_back(d.has_dim_param() ? d.dim_param() : "");
        }
      }
    } else if (type.has_sequence_type() || type.has_optional_type() || type.has_map_type() ||
               type.has_sparse_tensor_type()) {
      info.is_tensor = false;  // an empty type (some exporters leave subgraph outputs so) is read as a tensor
      info.type_name = type_name(type);
      // The tensor type a sequence(tensor), optional(tensor) or optional(sequence(tensor)) holds, if it is one.
      const auto sequence_of_tensors = [](const onnx::TypeProto& t) {
        return t.has_sequence_type() && t.sequence_type().elem_type().has_tensor_type();
      };
      const onnx::TypeProto* held = nullptr;
      if (sequence_of_tensors(type))
        held = &type.sequence_type().elem_type();
      else if (type.has_optional_type() && type.optional_type().elem_type().has_tensor_type())
        held = &type.optional_type().elem_type();
      else if (type.has_optional_type() && sequence_of_tensors(type.optional_type().elem_type()))
        held = &type.optional_type().elem_type().sequence_type().elem_type();
      if (held) {
        info.boxed = type.has_sequence_type() ? Value::Kind::Sequence : Value::Kind::Optional;
        info.elem_type = held->tensor_type().elem_type();
      }
    }
    return info;
  }

  // "sequence(tensor(float))", "optional(tensor(int64))", "map(string, tensor(float))": a value type in words.
  static std::string type_name(const onnx::TypeProto& type) {
    if (type.has_tensor_type()) return "tensor(" + onnx_type_name(type.tensor_type().elem_type()) + ")";
    if (type.has_sequence_type()) return "sequence(" + type_name(type.sequence_type().elem_type()) + ")";
    if (type.has_optional_type()) return "optional(" + type_name(type.optional_type().elem_type()) + ")";
    if (type.has_map_type())
      return "map(" + onnx_type_name(type.map_type().key_type()) + ", " + type_name(type.map_type().value_type()) + ")";
    return "sparse_tensor(" + onnx_type_name(type.sparse_tensor_type().elem_type()) + ")";
  }

  Attribute attribute(onnx::AttributeProto& a, const std::string& where, int depth,
                      const std::map<std::string, int64_t>& opsets) {
    Attribute out;
    using A = onnx::AttributeProto;
    A::AttributeType type = a.type();
    if (type == A::UNDEFINED) {  // IR < 2 models leave the type out: infer it from the field present
      if (a.has_f()) type = A::FLOAT;
      else if (a.has_i()) type = A::INT;
      else if (a.has_s()) type = A::STRING;
      else if (a.has_t()) type = A::TENSOR;
      else if (a.has_g()) type = A::GRAPH;
      else if (a.floats_size()) type = A::FLOATS;
      else if (a.ints_size()) type = A::INTS;
      else if (a.strings_size()) type = A::STRINGS;
    }
    const std::string what = where + " attribute '" + a.name() + "'";
    switch (type) {
      case A::FLOAT: out.kind = Attribute::Kind::Float; out.f = a.f(); break;
      case A::INT: out.kind = Attribute::Kind::Int; out.i = a.i(); break;
      case A::STRING: out.kind = Attribute::Kind::String; out.s = a.s(); break;
      case A::TENSOR:
        out.kind = Attribute::Kind::Tensor;
        out.t = tensor_from_proto(std::move(*a.mutable_t()), base_dir, file + ": " + what);
        break;
      case A::GRAPH:
        out.kind = Attribute::Kind::Graph;
        out.g = graph(*a.mutable_g(), depth + 1, opsets);
        break;
      case A::FLOATS: out.kind = Attribute::Kind::Floats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
      case A::INTS: out.kind = Attribute::Kind::Ints; out.ints.assign(a.ints().begin(), a.ints().end()); break;
      case A::STRINGS: out.kind = Attribute::Kind::Strings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
      case A::TENSORS:
        out.kind = Attribute::Kind::Tensors;
        for (auto& t : *a.mutable_tensors())
          out.tensors.push_back(tensor_from_proto(std::move(t), base_dir, file + ": " + what));
        break;
      case A::GRAPHS:
        out.kind = Attribute::Kind::Graphs;
        for (auto& g : *a.mutable_graphs()) out.graphs.push_back(graph(g, depth + 1, opsets));
        break;
      default: out.kind = Attribute::Kind::Other; break;  // sparse tensors, type protos: kept opaque
    }
    return out;
  }

  // Values a graph reads but does not define: for subgraphs these come from the enclosing scope.
  static std::set<std::string> free_values(const Graph& g) {
    std::unordered_set<std::string> defined;
    for (const auto& [name, t] : g.initializers) defined.insert(name);
    for (const auto& in : g.inputs) defined.insert(in.name);
    for (const auto& n : g.nodes)
      for (const auto& o : n.outputs) defined.insert(o);
    std::set<std::string> free;
    for (const auto& n : g.nodes) {
      for (const auto& i : n.inputs)
        if (!i.empty() && !defined.count(i)) free.insert(i);
      for (const auto& i : n.implicit_inputs)
        if (!defined.count(i)) free.insert(i);
    }
    for (const auto& o : g.outputs)
      if (!defined.count(o.name)) free.insert(o.name);
    return free;
  }

  // Takes the initializers' bytes out of `proto` rather than copying them.
  std::shared_ptr<Graph> graph(onnx::GraphProto& proto, int depth, const std::map<std::string, int64_t>& opsets) {
    if (!(depth <= limits.max_subgraph_depth))
      fail(file + ": subgraphs nested deeper than " + std::to_string(limits.max_subgraph_depth) + " levels");
    auto g = std::make_shared<Graph>();
    g->name = proto.name();
    g->opsets = opsets;
    if (!(proto.sparse_initializer_size() == 0)) fail(file + ": sparse initializers are not supported");
    for (auto& init : *proto.mutable_initializer()) {
      if (!(!init.name().empty())) fail(file + ": an initializer has no name");
      if (!(!g->initializers.count(init.name()))) fail(file + ": initializer '" + init.name() + "' is defined twice");
      const std::string name = init.name();
      g->initializers.emplace(name,
                              tensor_from_proto(std::move(init), base_dir, file + ": initializer '" + name + "'"));
    }
    std::set<std::string> declared;
    for (const auto& in : proto.input()) {
      if (!declared.insert(in.name()).second) fail(file + ": graph input '" + in.name() + "' is declared twice");
      if (!g->initializers.count(in.name())) g->inputs.push_back(value_info(in));
    }
    for (const auto& out : proto.output()) g->outputs.push_back(value_info(out));

    std::vector<Node> nodes;
    nodes.reserve(static_cast<size_t>(proto.node_size()));
    for (auto& n : *proto.mutable_node()) {
      Node node;
      node.op_type = n.op_type();
      node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
      node.name = n.name().empty() ? node.op_type + "_" + std::to_string(nodes.size()) : n.name();
      if (!(!node.op_type.empty())) fail(file + ": " + node.label() + " has no op_type");
      node.inputs.assign(n.input().begin(), n.input().end());
      node.outputs.assign(n.output().begin(), n.output().end());
      for (auto& a : *n.mutable_attribute()) {
        if (node.attributes.count(a.name()))
          fail(file + ": " + node.label() + ": attribute '" + a.name() + "' is given twice");
        node.attributes[a.name()] = attribute(a, file + ": " + node.label(), depth, opsets);
      }
      for (const auto& [key, a] : node.attributes) {
        std::vector<std::shared_ptr<const Graph>> subgraphs = a.graphs;
        if (a.g) subgraphs.push_back(a.g);
        for (const auto& sub : subgraphs)
          for (const auto& v : free_values(*sub))
            if (std::find(node.implicit_inputs.begin(), node.implicit_inputs.end(), v) == node.implicit_inputs.end())
              node.implicit_inputs.push_back(v);
      }
      nodes.push_back(std::move(node));
    }
    g->nodes = topological_order(std::move(nodes), *g, depth > 0);
    return g;
  }

  // Kahn's algorithm, preferring file order among ready nodes. Fails on dangling references (top-level
  // graphs only: subgraphs may read the enclosing scope), duplicate producers and cycles.
  std::vector<Node> topological_order(std::vector<Node> nodes, const Graph& g, bool is_subgraph) {
    std::unordered_map<std::string, size_t> producer;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const auto& o : nodes[i].outputs) {
        if (o.empty()) continue;
        if (!(!g.initializers.count(o)))
          fail(file + ": " + nodes[i].label() + " writes '" + o + "', which is an initializer");
        const auto [it, inserted] = producer.emplace(o, i);
        if (!inserted)
          fail(file + ": value '" + o + "' is produced by both " + nodes[it->second].label() + " and " + nodes[i].label());
      }
    std::unordered_set<std::string> graph_inputs;
    for (const auto& in : g.inputs) graph_inputs.insert(in.name);
    std::vector<size_t> pending(nodes.size(), 0);
    std::vector<std::vector<size_t>> consumers(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::set<size_t> deps;
      auto depend = [&](const std::string& v) {
        if (v.empty()) return;
        auto it = producer.find(v);
        if (it != producer.end()) {
          deps.insert(it->second);
          return;
        }
        if (!(is_subgraph || g.initializers.count(v) || graph_inputs.count(v)))
          fail(file + ": " + nodes[i].label() + " reads '" + v +
               "', which no node, graph input or initializer provides");
      };
      for (const auto& v : nodes[i].inputs) depend(v);
      for (const auto& v : nodes[i].implicit_inputs) depend(v);
      for (size_t d : deps) consumers[d].push_back(i);
      pending[i] = deps.size();
    }
    for (const auto& out : g.outputs)
      if (!(is_subgraph || producer.count(out.name) || g.initializers.count(out.name) || graph_inputs.count(out.name)))
        fail(file + ": graph output '" + out.name + "' is not produced by any node");
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] == 0) ready.push(i);
    std::vector<Node> ordered;
    ordered.reserve(nodes.size());
    std::vector<bool> done(nodes.size(), false);
    while (!ready.empty()) {
      const size_t i = ready.top();
      ready.pop();
      done[i] = true;
      for (size_t c : consumers[i])
        if (--pending[c] == 0) ready.push(c);
      ordered.push_back(std::move(nodes[i]));
    }
    if (ordered.size() != nodes.size()) {
      for (size_t i = 0; i < nodes.size(); ++i)
        if (!done[i]) fail(file + ": the graph has a cycle through " + nodes[i].label());
    }
    return ordered;
  }
};

}  // namespace

namespace {

Model model_from_proto(onnx::ModelProto& proto, const fs::path& base_dir, const std::string& display_name,
                       const LoadLimits& limits) {
  if (!(proto.has_graph())) fail(display_name + ": not an ONNX model (no graph)");
  if (!(proto.ir_version() > 0)) fail(display_name + ": not an ONNX model (no IR version)");
  Model model;
  model.path = display_name;
  model.ir_version = proto.ir_version();
  model.producer = proto.producer_name();
  std::map<std::string, int64_t> opsets;
  for (const auto& op : proto.opset_import()) {
    const std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    if (!(op.version() > 0))
      fail(display_name + ": opset import for domain '" + domain + "' has version " + std::to_string(op.version()));
    opsets[domain] = op.version();
  }
  if (!opsets.count("") && proto.ir_version() < 3) opsets[""] = 1;  // IR v1/v2 models predate opset_import
  GraphLoader loader{base_dir, display_name, limits};
  model.graph = loader.graph(*proto.mutable_graph(), 0, opsets);
  return model;
}

}  // namespace

Model load_model_from_bytes(const std::string& bytes, const fs::path& base_dir, const std::string& display_name,
                            const LoadLimits& limits) {
  if (!(!bytes.empty())) fail(display_name + ": empty file, not an ONNX model");
  onnx::ModelProto proto;
  if (!(proto.ParseFromString(bytes))) fail(display_name + ": not an ONNX model (protobuf parsing failed)");
  return model_from_proto(proto, base_dir, display_name, limits);
}

// Parsed straight from the file: a copy of the whole file beside the parsed message would raise the
// peak memory of loading a large model by the model's size.
Model load_model(const fs::path& path, const LoadLimits& limits) {
  const std::string display_name = path.string();
  const uintmax_t size = checked_file_size(path, limits.max_file_bytes);
  if (size == 0) fail(display_name + ": empty file, not an ONNX model");
  // Parsed, the message holds about the file's size: refuse a model that cannot fit before parsing it.
  memory_budget::require(display_name + ": loading the model", size);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(display_name + ": cannot open for reading");
  onnx::ModelProto proto;
  if (!(proto.ParseFromIstream(&in))) fail(display_name + ": not an ONNX model (protobuf parsing failed)");
  return model_from_proto(proto, path.parent_path(), display_name, limits);
}

}  // namespace mpa
