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

}  // namespace mpa
