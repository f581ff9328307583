#include "fix/keep_list.h"

#include <algorithm>

#include "common/error.h"

namespace mpa::fix {

namespace {

constexpr const char* kFormats = "trtexec, polygraphy, autocast, onnxconverter or names";

// One shell word: single-quoted, a quote inside written as '\''.
std::string shell_word(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A regular expression matching exactly `name`.
std::string anchored_regex(const std::string& name) {
  std::string out = "^";
  for (char c : name) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

// A Python string literal.
std::string python_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::vector<KeepListExport> parse_keep_list_exports(const std::vector<std::string>& specs) {
  std::vector<KeepListExport> out;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    const std::string format = spec.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == spec.size())
      fail("--export-keep-list '" + spec + "': expected FORMAT=FILE, FORMAT one of " + kFormats);
    if (format != "trtexec" && format != "polygraphy" && format != "autocast" && format != "onnxconverter" &&
        format != "names")
      fail("--export-keep-list '" + spec + "': unknown format '" + format + "' (" + kFormats + ")");
    out.push_back({format, spec.substr(eq + 1)});
  }
  return out;
}

std::string keep_list_text(const std::string& format, const std::vector<std::string>& keep,
                           const std::vector<std::string>& forced, const std::string& model,
                           const std::string& target) {
  std::vector<std::string> nodes = keep;
  for (const std::string& n : forced)
    if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  std::string text;
  if (format == "names") {
    for (const std::string& n : nodes) text += n + "\n";
  } else if (format == "trtexec") {
    std::string layers;
    for (const std::string& n : nodes) layers += (layers.empty() ? "" : ",") + n + ":fp32";
    text = "trtexec --onnx=" + shell_word(model) + " --" + target;
    if (!nodes.empty()) text += " --precisionConstraints=obey --layerPrecisions=" + shell_word(layers);
    text += "\n";
  } else if (format == "polygraphy") {
    text = "polygraphy convert " + shell_word(model) + " --" + target;
    if (!nodes.empty()) {
      text += " --precision-constraints obey --layer-precisions";
      for (const std::string& n : nodes) text.append(" ").append(shell_word(n + ":float32"));
    }
    text += " -o model.engine\n";
  } else if (format == "autocast") {
    text = "python -m modelopt.onnx.autocast --onnx_path " + shell_word(model) + " --low_precision_type " + target;
    if (!nodes.empty()) {
      text += " --nodes_to_exclude";
      for (const std::string& n : nodes) text.append(" ").append(shell_word(anchored_regex(n)));
    }
    text += "\n";
  } else {
    text = "import onnx\nfrom onnxconverter_common import float16\n\nmodel = onnx.load(" + python_string(model) +
           ")\nnode_block_list = [";
    for (size_t i = 0; i < nodes.size(); ++i) text += (i ? ", " : "") + python_string(nodes[i]);
    text +=
        "]\nmixed = float16.convert_float_to_float16(model, keep_io_types=True, node_block_list=node_block_list)\n"
        "onnx.save(mixed, " +
        python_string(model + ".mixed.onnx") + ")\n";
  }
  return text;
}

}  // namespace mpa::fix
