// The graph IR: nodes in topological order, initializers as tensors, attributes decoded from protobuf
// once at load time. Nothing here depends on the ONNX schema registry, so new opsets load.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "tensor/value.h"

namespace mpa {

struct Graph;

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs, Other };
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  mpa::Tensor t;
  std::shared_ptr<const Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<mpa::Tensor> tensors;
  std::vector<std::shared_ptr<const Graph>> graphs;

  static Attribute of_int(int64_t v) { return with(Kind::Int, [&](Attribute& a) { a.i = v; }); }
  static Attribute of_float(float v) { return with(Kind::Float, [&](Attribute& a) { a.f = v; }); }
  static Attribute of_string(std::string v) { return with(Kind::String, [&](Attribute& a) { a.s = std::move(v); }); }
  static Attribute of_ints(std::vector<int64_t> v) { return with(Kind::Ints, [&](Attribute& a) { a.ints = std::move(v); }); }
  static Attribute of_floats(std::vector<float> v) {
    return with(Kind::Floats, [&](Attribute& a) { a.floats = std::move(v); });
  }
  static Attribute of_tensor(mpa::Tensor v) { return with(Kind::Tensor, [&](Attribute& a) { a.t = std::move(v); }); }

 private:
  template <class Fill> static Attribute with(Kind kind, Fill&& fill) {
    Attribute a;
    a.kind = kind;
    fill(a);
    return a;
  }
};

struct Node {
  std::string name;    // never empty: unnamed nodes get "<op_type>_<index>"
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain ("ai.onnx" is normalised to "")
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attributes;
  // Outer-scope values read inside this node's subgraphs (If/Loop/Scan bodies): real dependencies for
  // ordering and liveness although they are not listed in `inputs`.
  std::vector<std::string> implicit_inputs;

  const Attribute* attribute(const std::string& key) const;
  std::string label() const;  // "node 'name' (OpType)" for error messages
};

// A declared graph input/output. Dims are known (>= 0) or symbolic (-1, with dim_params naming them).
struct ValueInfo {
  std::string name;
  int32_t elem_type = 0;  // ONNX TensorProto type id, 0 when not a tensor or not declared
  bool has_shape = false;
  Shape dims;
  std::vector<std::string> dim_params;
  bool is_tensor = true;  // false for sequence/map/optional values
  std::string type_name;  // such a value's type in words ("sequence(tensor(float))"); empty for tensors
  // Set for the non-tensor values the runtime holds (tensor/value.h): sequence(tensor), optional(tensor),
  // optional(sequence(tensor)); elem_type is then their tensors' element type.
  std::optional<Value::Kind> boxed;
};

// The declared shape as text ("1x3xHxW", "scalar", "no shape"), symbolic dims by name.
std::string declared_shape_str(const ValueInfo& info);
// Whether a shape matches what is declared: its rank and every fixed dim (symbolic dims take any size).
bool shape_fits(const ValueInfo& info, const Shape& shape);

struct Graph {
  std::string name;
  std::vector<Node> nodes;  // topological order
  std::map<std::string, Tensor> initializers;
  std::vector<ValueInfo> inputs;   // excludes inputs that are also initializers (those may still be fed)
  std::vector<ValueInfo> outputs;
  std::map<std::string, int64_t> opsets;  // domain -> version ("" = ai.onnx); inherited by subgraphs

  int64_t opset(const std::string& domain) const;
};

struct Model {
  std::string path;  // file it was loaded from (for messages)
  int64_t ir_version = 0;
  std::string producer;
  std::shared_ptr<Graph> graph;
};

}  // namespace mpa
