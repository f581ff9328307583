#include "audit/rounding_commutes.h"

#include <set>
#include <string>

namespace mpa {

bool rounding_commutes_with(const Node& node) {
  // Pad is absent: its constant may lie off the format's grid only in the reference. Resize (nearest)
  // and AveragePool compute new values in some modes, so they are absent too.
  static const std::set<std::string> selections = {
      "Identity", "Reshape", "Flatten",     "Squeeze",      "Unsqueeze", "Transpose", "Concat",  "Split",
      "Slice",    "Gather",  "GatherElements", "GatherND",  "Expand",    "Tile",      "DepthToSpace",
      "SpaceToDepth", "Relu", "MaxPool",    "GlobalMaxPool", "Max",      "Min",       "Abs",     "Neg",
      "ReduceMax", "ReduceMin", "Where"};
  return node.domain.empty() && selections.count(node.op_type) > 0;
}

}  // namespace mpa
