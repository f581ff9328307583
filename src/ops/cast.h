// Cast's target type, shared by the CPU and CUDA kernels: the 'to' attribute (a type name string in opset 1);
// valid ONNX types the runtime does not store raise UnsupportedType, anything else fails naming the node.
#pragma once
#include "ops/op.h"

namespace mpa {

DType cast_target(const OpInit& init);

}  // namespace mpa
