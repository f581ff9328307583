#include "fix/presets.h"

#include <algorithm>

#include "common/error.h"

namespace mpa::fix {

const std::vector<KeepPreset>& keep_presets() {
  static const std::vector<KeepPreset> presets = {
      {"pytorch-autocast",
       "PyTorch CUDA autocast's float32 ops (pow, acos, asin, cosh, sinh, tan, exp, log, softplus, reciprocal, "
       "cumprod, cumsum, prod, sum, norm, normalize, layer_norm, group_norm, softmax, log_softmax, nll_loss, "
       "cross_entropy)",
       {"Pow",
        "Acos",
        "Asin",
        "Cosh",
        "Sinh",
        "Tan",
        "Exp",
        "Log",
        "Softplus",
        "Reciprocal",
        "CumProd",
        "CumSum",
        "ReduceProd",
        "ReduceSum",
        "ReduceSumSquare",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "LpNormalization",
        "LayerNormalization",
        "GroupNormalization",
        "Softmax",
        "LogSoftmax",
        "NegativeLogLikelihoodLoss",
        "SoftmaxCrossEntropyLoss"}},
      {"norm-softmax",
       "normalisations and softmax in FP32",
       {"BatchNormalization", "LayerNormalization", "GroupNormalization", "InstanceNormalization", "RMSNormalization",
        "LpNormalization", "MeanVarianceNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
        "SkipSimplifiedLayerNormalization", "EmbedLayerNormalization", "Softmax", "LogSoftmax"}},
      {"onnxconverter-default",
       "onnxconverter-common's DEFAULT_OP_BLOCK_LIST",
       {"ArrayFeatureExtractor",
        "Binarizer",
        "CastMap",
        "CategoryMapper",
        "DictVectorizer",
        "FeatureVectorizer",
        "Imputer",
        "LabelEncoder",
        "LinearClassifier",
        "LinearRegressor",
        "Normalizer",
        "OneHotEncoder",
        "RandomUniformLike",
        "SVMClassifier",
        "SVMRegressor",
        "Scaler",
        "TreeEnsembleClassifier",
        "TreeEnsembleRegressor",
        "ZipMap",
        "NonMaxSuppression",
        "TopK",
        "RoiAlign",
        "Resize",
        "Range",
        "CumSum",
        "Min",
        "Max",
        "Upsample"}},
  };
  return presets;
}

const KeepPreset& keep_preset(const std::string& name) {
  std::string names;
  for (const KeepPreset& p : keep_presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  fail("--keep-fp32-preset '" + name + "': no such preset (" + names + ")");
}

std::vector<std::string> nodes_of_ops(const Graph& graph, const std::vector<std::string>& ops) {
  std::vector<std::string> names;
  for (const Node& node : graph.nodes)
    if (std::find(ops.begin(), ops.end(), node.op_type) != ops.end()) names.push_back(node.name);
  return names;
}

std::vector<std::string> resolve_keep_set(const Graph& graph, const std::vector<std::string>& nodes,
                                          const std::vector<std::string>& ops, const std::string& preset) {
  std::vector<std::string> keep;
  const auto add = [&](const std::vector<std::string>& names) {
    for (const std::string& n : names)
      if (std::find(keep.begin(), keep.end(), n) == keep.end()) keep.push_back(n);
  };
  add(nodes);
  add(nodes_of_ops(graph, ops));
  if (!preset.empty()) add(nodes_of_ops(graph, keep_preset(preset).ops));
  return keep;
}

}  // namespace mpa::fix
