// A keep-set written for the tools people deploy with, so that the verified set is applied as found:
//   trtexec       --precisionConstraints=obey --layerPrecisions=NODE:fp32,... (TensorRT names a layer after
//                 its ONNX node)
//   polygraphy    --precision-constraints obey --layer-precisions NODE:float32 ...
//   autocast      ModelOpt AutoCast's --nodes_to_exclude (regular expressions, so each name is anchored
//                 and escaped)
//   onnxconverter onnxconverter-common's convert_float_to_float16(..., node_block_list=[...]) as Python
//   names         one node name per line
#pragma once
#include <string>
#include <vector>

namespace mpa::fix {

struct KeepListExport {
  std::string format, path;
};

// `--export-keep-list FORMAT=FILE` values; fails naming the option on an unknown format or an empty file.
std::vector<KeepListExport> parse_keep_list_exports(const std::vector<std::string>& specs);

// The text of one export: `keep` (the verified set) and `forced` (--keep-fp32) together, for `model` in
// target format `target` (fp16, bf16, ...).
std::string keep_list_text(const std::string& format, const std::vector<std::string>& keep,
                           const std::vector<std::string>& forced, const std::string& model, const std::string& target);

}  // namespace mpa::fix
