#include "model/graph.h"

namespace mpa {

const Attribute* Node::attribute(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? nullptr : &it->second;
}

std::string Node::label() const { return "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op_type + ")"; }

int64_t Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain);
  return it == opsets.end() ? 0 : it->second;
}

std::string declared_shape_str(const ValueInfo& info) {
  if (!info.has_shape) return "no shape";
  std::string s;
  for (size_t i = 0; i < info.dims.size(); ++i) {
    s += i ? "x" : "";
    s += info.dims[i] >= 0 ? std::to_string(info.dims[i]) : (info.dim_params[i].empty() ? "?" : info.dim_params[i]);
  }
  return s.empty() ? "scalar" : s;
}

bool shape_fits(const ValueInfo& info, const Shape& shape) {
  if (!info.has_shape) return true;
  if (info.dims.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (info.dims[i] >= 0 && info.dims[i] != shape[i]) return false;
  return true;
}

}  // namespace mpa
