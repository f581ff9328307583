// Builds small ONNX models in tests with the protobuf API, so every test model is made by code here.
#pragma once
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mpa::test {

// Adds inputs, outputs, nodes and initializers to a graph: a model's main graph (ModelBuilder) or the
// subgraph of an If, Loop or Scan node (SubgraphBuilder). `Self::graph()` names the graph.
template <class Self>
class GraphBuilder {
 public:
  Self& input(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
    fill_value_info(graph().add_input(), name, elem_type, dims);
    return self();
  }
  Self& output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT,
               const std::vector<int64_t>& dims = {}) {
    fill_value_info(graph().add_output(), name, elem_type, dims, !dims.empty());
    return self();
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(graph().node_size() - 1) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  onnx::TensorProto& initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *t;
  }
  onnx::TensorProto& int64_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& values) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *t;
  }

  static void set_ints(onnx::NodeProto& n, const std::string& key, const std::vector<int64_t>& values) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void set_int(onnx::NodeProto& n, const std::string& key, int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void set_string(onnx::NodeProto& n, const std::string& key, const std::string& value) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  }
  static void set_graph(onnx::NodeProto& n, const std::string& key, const onnx::GraphProto& g) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g;
  }

 private:
  Self& self() { return static_cast<Self&>(*this); }
  onnx::GraphProto& graph() { return self().graph(); }
  static void fill_value_info(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
                              const std::vector<int64_t>& dims, bool with_shape = true) {
    v->set_name(name);
    auto* tensor = v->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    if (!with_shape) return;
    auto* shape = tensor->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("N");
    }
  }
};

class ModelBuilder : public GraphBuilder<ModelBuilder> {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("mpaudit-tests");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }
  void save(const std::filesystem::path& path) const {
    std::ofstream out(path, std::ios::binary);
    const std::string b = bytes();
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  }

 private:
  onnx::ModelProto model_;
};

// A subgraph: an If branch or a Loop/Scan body, attached to its node with set_graph().
class SubgraphBuilder : public GraphBuilder<SubgraphBuilder> {
 public:
  explicit SubgraphBuilder(const std::string& name) { graph_.set_name(name); }
  onnx::GraphProto& graph() { return graph_; }

 private:
  onnx::GraphProto graph_;
};

// A fresh, empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("mpaudit-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

}  // namespace mpa::test
