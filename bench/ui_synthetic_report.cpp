// Writes a synthetic fp16 audit report of N nodes shaped like an exported BERT encoder, for timing the
// dashboard on large graphs (bench/README.md "Dashboard frame time"):
//
//   mpaudit_ui_synthetic_report 10000 synthetic.json
//   xvfb-run -a -s '-screen 0 1600x1200x24' mpaudit view synthetic.json --view graph --expand-all --bench-frames 200
//
// Each layer of 25 nodes is named as torch.onnx exports them (/encoder/layer.L/attention/self/query/MatMul, ...)
// and wired like one: query, key and value read the layer's input, scores read query and key, the context
// reads the softmax and value, the residual Add reads the layer's input again. One node in 97 overflows
// fp16 (unsafe), one in 13 loses precision (warn). Figures come from the real probes over 64 values per node.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reports/report.h"

namespace {

using namespace mpa;

struct LayerNode {
  const char* scope;  // below /encoder/layer.L
  const char* op;
  int input;          // index within the layer of the node it reads; -1: the layer's input
  int second_input;   // a second such input, or -2 for none
};

// One encoder layer; indices refer to this table.
constexpr LayerNode kLayer[] = {
    {"attention/self/query", "MatMul", -1, -2},      // 0
    {"attention/self/query", "Add", 0, -2},          // 1
    {"attention/self/key", "MatMul", -1, -2},        // 2
    {"attention/self/key", "Add", 2, -2},            // 3
    {"attention/self/value", "MatMul", -1, -2},      // 4
    {"attention/self/value", "Add", 4, -2},          // 5
    {"attention/self", "Transpose", 3, -2},          // 6
    {"attention/self", "MatMul", 1, 6},              // 7 scores
    {"attention/self", "Div", 7, -2},                // 8
    {"attention/self", "Add", 8, -2},                // 9 mask
    {"attention/self", "Softmax", 9, -2},            // 10
    {"attention/self", "MatMul", 10, 5},             // 11 context
    {"attention/self", "Transpose", 11, -2},         // 12
    {"attention/self", "Reshape", 12, -2},           // 13
    {"attention/output/dense", "MatMul", 13, -2},    // 14
    {"attention/output/dense", "Add", 14, -2},       // 15
    {"attention/output", "Add", 15, -1},             // 16 residual
    {"attention/output/LayerNorm", "ReduceMean", 16, -2},  // 17
    {"attention/output/LayerNorm", "Sub", 16, 17},   // 18
    {"attention/output/LayerNorm", "Pow", 18, -2},   // 19
    {"attention/output/LayerNorm", "ReduceMean", 19, -2},  // 20
    {"attention/output/LayerNorm", "Sqrt", 20, -2},  // 21
    {"attention/output/LayerNorm", "Div", 18, 21},   // 22
    {"intermediate/dense", "MatMul", 22, -2},        // 23
    {"intermediate", "Gelu", 23, -2},                // 24
};
constexpr int kLayerSize = sizeof kLayer / sizeof kLayer[0];

report::TensorStats tensor_for(const std::string& name, int node, const char* target, report::Verdict& verdict) {
  report::TensorStats tensor;
  tensor.name = name;
  tensor.shape = {1, 64};
  tensor.dtype = "float32";
  tensor.measured = true;
  const bool overflows = node % 97 == 5, imprecise = node % 13 == 7;
  const double scale = overflows ? 1e5 : std::ldexp(1.0, (node % 17) - 8);
  const probes::Divergence::Params params(Format::FP16, probes::Tolerances{});
  const probes::FormatFit::Bounds bounds(Format::FP16);
  probes::RangeProbe::Chunk range;
  probes::ExpHistogram::Chunk hist;
  probes::FormatFit::Chunk fit;
  probes::Divergence::Chunk propagated, isolated, stored;
  for (int i = 0; i < 64; ++i) {
    const double reference = scale * std::sin(0.37 * (i + 1) + node);
    const double relative_error = imprecise ? 3e-2 : 4e-4;
    const double target = std::fabs(reference) > 65504 ? INFINITY : reference * (1 + relative_error * std::cos(1.3 * i));
    range.add(reference);
    hist.add(reference);
    fit.add(reference, bounds);
    propagated.add(reference, target, params);
    isolated.add(reference, target, params);
    stored.add(reference, reference * (1 + 2e-4 * std::cos(0.7 * i)), params);
  }
  tensor.range.absorb(range);
  tensor.hist.absorb(hist);
  report::TensorTarget& t = tensor.targets[target];
  t.fit.absorb(fit);
  t.propagated_hist.absorb(hist);
  t.propagated.absorb(propagated);
  t.isolated.absorb(isolated);
  t.stored.absorb(stored);
  verdict = overflows ? report::Verdict::Unsafe : imprecise ? report::Verdict::Warn : report::Verdict::Safe;
  return tensor;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NODES OUT.json\n", argv[0]);
    return 2;
  }
  const int node_count = std::atoi(argv[1]);
  const char* target = "fp16";
  report::Report r;
  r.tool_version = MPA_VERSION;
  r.model_path = "synthetic-bert-" + std::to_string(node_count) + ".onnx";
  r.model_sha256 = std::string(64, '0');
  r.opset = 17;
  r.config.targets = {target};
  r.config.samples = r.config.total_samples = 1;
  r.config.sample_ranges = {{0, 1}};
  r.config.inputs = "synthetic";
  report::TargetSummary& summary = r.summary[target];
  std::string layer_input = "embeddings";
  std::vector<std::string> outputs(kLayerSize);
  for (int index = 0; index < node_count; ++index) {
    const int layer = index / kLayerSize, k = index % kLayerSize;
    const LayerNode& spec = kLayer[k];
    report::NodeStats node;
    node.index = index;
    node.op_type = spec.op;
    node.name = "/encoder/layer." + std::to_string(layer) + "/" + spec.scope + "/" + spec.op + "_" + std::to_string(k);
    node.inputs.push_back(spec.input < 0 ? layer_input : outputs[static_cast<size_t>(spec.input)]);
    if (spec.second_input >= -1) node.inputs.push_back(spec.second_input < 0 ? layer_input : outputs[static_cast<size_t>(spec.second_input)]);
    outputs[static_cast<size_t>(k)] = node.name + "_output_0";
    node.outputs = {outputs[static_cast<size_t>(k)]};
    report::Verdict verdict = report::Verdict::Safe;
    node.tensors.push_back(tensor_for(node.outputs[0], index, target, verdict));
    report::NodeTarget& node_target = node.targets[target];
    node_target.verdict = verdict;
    if (verdict == report::Verdict::Unsafe) {
      node_target.reasons.push_back({"overflow", verdict, "reference absmax 1e+05 exceeds fp16 max 65504"});
      summary.unsafe_nodes.push_back(node.name);
      summary.culprits.push_back(node.name);
      summary.keep_fp32.push_back(node.name);
      if (summary.first_unsafe.empty()) summary.first_unsafe = node.name;
    } else if (verdict == report::Verdict::Warn) {
      node_target.reasons.push_back({"precision_loss", verdict, "isolated SQNR about 33 dB"});
      summary.warn_nodes.push_back(node.name);
    }
    if (k == kLayerSize - 1) layer_input = node.outputs[0];
    r.nodes.push_back(std::move(node));
  }
  summary.pass = summary.unsafe_nodes.empty();
  report::write_report(argv[2], r);
  std::printf("wrote %s: %d nodes, %zu unsafe, %zu warn\n", argv[2], node_count, summary.unsafe_nodes.size(),
              summary.warn_nodes.size());
  return 0;
}
