// Runs one ONNX op through the real runtime (loader, Session, executor rounding) under chosen precision
// settings: the numerics tests check op math exactly as an audit executes it.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"

namespace mpa::test {

struct NodeInput {
  std::string name;
  Tensor value;
};

// A graph of one node `op` with the given inputs (graph inputs, fed at run time) and one output "y" of
// element type `output_type` (an onnx::TensorProto data type). `configure` adds attributes to the node.
class OneNode {
 public:
  OneNode(const std::string& op, std::vector<std::string> input_names, int64_t opset = 20,
          int32_t output_type = onnx::TensorProto::FLOAT)
      : builder_(opset), op_(op), input_names_(std::move(input_names)), output_type_(output_type) {}

  OneNode& attribute(const std::string& key, int64_t value) {
    attributes_.emplace_back([=](onnx::AttributeProto& a) {
      a.set_name(key);
      a.set_type(onnx::AttributeProto::INT);
      a.set_i(value);
    });
    return *this;
  }
  OneNode& attribute(const std::string& key, float value) {
    attributes_.emplace_back([=](onnx::AttributeProto& a) {
      a.set_name(key);
      a.set_type(onnx::AttributeProto::FLOAT);
      a.set_f(value);
    });
    return *this;
  }
  OneNode& attribute(const std::string& key, const std::string& value) {
    attributes_.emplace_back([=](onnx::AttributeProto& a) {
      a.set_name(key);
      a.set_type(onnx::AttributeProto::STRING);
      a.set_s(value);
    });
    return *this;
  }
  OneNode& attribute(const std::string& key, const std::vector<int64_t>& values) {
    attributes_.emplace_back([=](onnx::AttributeProto& a) {
      a.set_name(key);
      a.set_type(onnx::AttributeProto::INTS);
      for (int64_t v : values) a.add_ints(v);
    });
    return *this;
  }

  // The node's operator domain, imported at version 1 (e.g. "com.microsoft" for onnxruntime's contrib ops).
  OneNode& domain(const std::string& name) {
    domain_ = name;
    auto* import = builder_.model().add_opset_import();
    import->set_domain(name);
    import->set_version(1);
    return *this;
  }

  // Output "y" of a run on `feeds` (one tensor per input name, in order). A fresh session per run: one
  // node costs nothing to load, and each run may use other options.
  Tensor run(const std::vector<Tensor>& feeds, const SessionOptions& options) const {
    Session session(graph(feeds), options);
    TensorMap map;
    for (size_t i = 0; i < feeds.size(); ++i) map[input_names_[i]] = feeds[i];
    return session.run(map).at("y");
  }

 private:
  static int32_t onnx_type(DType t) {
    switch (t) {
      case DType::Bool: return onnx::TensorProto::BOOL;
      case DType::Float16: return onnx::TensorProto::FLOAT16;
      case DType::Int64: return onnx::TensorProto::INT64;
      default: return onnx::TensorProto::FLOAT;
    }
  }
  std::shared_ptr<const Graph> graph(const std::vector<Tensor>& feeds) const {
    ModelBuilder b = builder_;
    for (size_t i = 0; i < feeds.size(); ++i) b.input(input_names_[i], onnx_type(feeds[i].dtype()), feeds[i].shape());
    onnx::NodeProto& node = b.node(op_, input_names_, {"y"});
    node.set_domain(domain_);
    for (const auto& set : attributes_) set(*node.add_attribute());
    b.output("y", output_type_);
    return load_model_from_bytes(b.bytes(), ".", op_ + ".onnx").graph;
  }

  ModelBuilder builder_;
  std::string op_, domain_;
  std::vector<std::string> input_names_;
  int32_t output_type_;
  std::vector<std::function<void(onnx::AttributeProto&)>> attributes_;
};

inline SessionOptions fp16_options(RuntimeProfile profile = RuntimeProfile::Generic,
                                   Accumulation accumulation = Accumulation::FP32) {
  SessionOptions o;
  o.precision = Format::FP16;
  o.accumulation = accumulation;
  o.profile = profile;
  return o;
}

inline Tensor float_tensor(const std::vector<float>& values, Shape shape) {
  return Tensor::from_vector<float>(values, std::move(shape));
}

}  // namespace mpa::test
