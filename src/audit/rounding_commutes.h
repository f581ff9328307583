// Ops whose float outputs are a selection of their float inputs' values (data movement, Relu, max pooling,
// Max/Min, Abs, Neg). Rounding is monotone, odd-symmetric and fixes zero, so running such an op on inputs
// stored in a format gives exactly its reference output stored in that format: the isolated run would only
// reproduce the stored output, and the audit takes that instead of running the node again.
#pragma once
#include "model/graph.h"

namespace mpa {

bool rounding_commutes_with(const Node& node);

}  // namespace mpa
