// The usual mixed-precision recipes as named sets of op types to keep in FP32, usable wherever a keep-set
// is (`run`, `audit`, `fix`: --keep-fp32-preset NAME, or --keep-fp32-ops OP,... for a list of one's own):
//   pytorch-autocast       the ops PyTorch's CUDA autocast runs in float32 (torch.amp docs, "CUDA Ops that
//                          can autocast to float32"), as ONNX op types
//   norm-softmax           normalisations and softmax in FP32, as mixed-precision guides teach
//   onnxconverter-default  onnxconverter-common's DEFAULT_OP_BLOCK_LIST (float16.py, 1.16)
// A recipe names op types, so a model that spells an op out (LayerNormalization as ReduceMean, Sub, Pow,
// Sqrt, Div) keeps none of its pieces: `fix` measures whether the recipe is enough for the model at hand.
#pragma once
#include <string>
#include <vector>

#include "model/graph.h"

namespace mpa::fix {

struct KeepPreset {
  std::string name, source;
  std::vector<std::string> ops;
};

const std::vector<KeepPreset>& keep_presets();
// The op types of preset `name`; fails naming the option and the presets there are.
const KeepPreset& keep_preset(const std::string& name);

// The top-level nodes of `graph` whose op type is in `ops`, in graph order.
std::vector<std::string> nodes_of_ops(const Graph& graph, const std::vector<std::string>& ops);

// The keep-set a command's options name: `nodes`, then the nodes of `ops` and of `preset` (empty: none),
// each once.
std::vector<std::string> resolve_keep_set(const Graph& graph, const std::vector<std::string>& nodes,
                                          const std::vector<std::string>& ops, const std::string& preset);

}  // namespace mpa::fix
