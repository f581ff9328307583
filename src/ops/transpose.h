// Transpose's permutation, shared by the CPU and CUDA kernels: the 'perm' attribute, checked to be a
// permutation of the input's axes, or the axes reversed.
#pragma once
#include <vector>

#include "ops/op.h"

namespace mpa {

class TransposeAttrs {
 public:
  explicit TransposeAttrs(const OpInit& init) : perm_(init.get_ints("perm")), has_perm_(init.has("perm")) {}
  std::vector<int64_t> perm(const Node& node, const Shape& in) const;

 private:
  std::vector<int64_t> perm_;
  bool has_perm_;
};

}  // namespace mpa
