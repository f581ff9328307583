// Runs the ONNX backend node tests (onnx/backend/test/data/node/*/model.onnx + test_data_set_*/*.pb)
// through the FP32 runtime and compares with the expected outputs (rtol 1e-3, atol 1e-7, as onnx's own
// backend runner). Cases whose ops or element types the runtime does not support are counted as
// unsupported and listed; there is no list of known failures. Exit code 1 when any case fails.
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/fake_backend.h"

namespace fs = std::filesystem;
using namespace mpa;

namespace {

struct Options {
  fs::path root;
  std::string filter = ".*";
  bool verbose = false;
  std::string device = "cpu";
  double rtol = 1e-3, atol = 1e-7;
};

enum class Outcome { Passed, Failed, Unsupported };

struct CaseResult {
  Outcome outcome = Outcome::Passed;
  std::string reason;  // failure message, or the unsupported op / element type
};

// Compares one output; returns an empty string when it matches.
std::string compare(const std::string& name, const Tensor& expected, const Tensor& actual, const Options& opt) {
  if (expected.dtype() != actual.dtype())
    return "output '" + name + "': type " + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
  if (expected.shape() != actual.shape())
    return "output '" + name + "': shape " + shape_str(actual.shape()) + ", expected " + shape_str(expected.shape());
  const std::vector<double> e = expected.to_double_vector(), a = actual.to_double_vector();
  const bool exact = !dtype_is_float(expected.dtype()) && !dtype_is_narrow_float(expected.dtype());
  for (size_t i = 0; i < e.size(); ++i) {
    const double x = a[i], y = e[i];
    bool ok;
    if (exact) ok = x == y;
    else if (std::isnan(y)) ok = std::isnan(x);
    else if (std::isinf(y)) ok = x == y;
    else ok = std::fabs(x - y) <= opt.atol + opt.rtol * std::fabs(y);
    if (!ok) {
      std::ostringstream s;
      s.precision(9);
      s << "output '" << name << "' element " << i << ": got " << x << ", expected " << y;
      return s.str();
    }
  }
  return "";
}

// A sequence/optional test value (onnx SequenceProto / OptionalProto file) as the runtime holds it;
// `declared` gives an empty sequence its element type.
ValuePtr load_value_pb(const fs::path& path, const ValueInfo& declared) {
  std::string bytes = read_file_bytes(path, uint64_t{1} << 30);
  const auto sequence = [&](const onnx::SequenceProto& proto) {
    if (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.elem_type() != onnx::SequenceProto::UNDEFINED)
      fail(path.string() + ": a sequence of non-tensors");
    std::vector<Tensor> elements;
    for (const auto& t : proto.tensor_values())
      elements.push_back(tensor_from_proto(t, path.parent_path(), path.string()));
    return Value::make_sequence(static_cast<DType>(declared.elem_type), std::move(elements));
  };
  if (*declared.boxed == Value::Kind::Sequence) {
    onnx::SequenceProto proto;
    if (!proto.ParseFromString(bytes)) fail(path.string() + ": not a serialized SequenceProto");
    return sequence(proto);
  }
  onnx::OptionalProto proto;
  if (!proto.ParseFromString(bytes)) fail(path.string() + ": not a serialized OptionalProto");
  if (proto.has_tensor_value())
    return Value::make_optional(tensor_from_proto(proto.tensor_value(), path.parent_path(), path.string()));
  if (proto.has_sequence_value()) return Value::make_optional(Tensor(), sequence(proto.sequence_value()));
  return Value::make_optional(Tensor());
}

// Compares a sequence/optional output; returns an empty string when it matches.
std::string compare_values(const std::string& name, const Value& expected, const Value* actual, const Options& opt) {
  if (!actual) return "output '" + name + "': a tensor, expected " + expected.describe();
  if (expected.kind != actual->kind || expected.has_element() != actual->has_element() ||
      expected.elements.size() != actual->elements.size() || expected.tensor.defined() != actual->tensor.defined())
    return "output '" + name + "': " + actual->describe() + ", expected " + expected.describe();
  if (expected.tensor.defined()) return compare(name, expected.tensor, actual->tensor, opt);
  if (expected.sequence) return compare_values(name, *expected.sequence, actual->sequence.get(), opt);
  for (size_t i = 0; i < expected.elements.size(); ++i) {
    const std::string diff =
        compare(name + "[" + std::to_string(i) + "]", expected.elements[i], actual->elements[i], opt);
    if (!diff.empty()) return diff;
  }
  return "";
}

std::vector<fs::path> sorted_entries(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) out.push_back(entry.path());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    // input_10.pb sorts after input_9.pb
    const std::string x = a.filename().string(), y = b.filename().string();
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  return out;
}

CaseResult run_case(const fs::path& dir, const Options& opt) {
  Model model;
  try {
    model = load_model(dir / "model.onnx");
  } catch (const UnsupportedType& e) {
    return {Outcome::Unsupported, std::string("element type: ") + e.what()};
  } catch (const Error& e) {
    return {Outcome::Failed, std::string("load: ") + e.what()};
  }
  const Graph& graph = *model.graph;
  const auto unsupported = find_unsupported_nodes(graph);
  if (!unsupported.empty()) {
    const Node& n = *unsupported.front().node;
    return {Outcome::Unsupported, "op " + (n.domain.empty() ? "" : n.domain + ".") + n.op_type};
  }
  for (const auto& list : {graph.inputs, graph.outputs})
    for (const ValueInfo& v : list) {
      if (!v.is_tensor && !v.boxed) return {Outcome::Unsupported, "map, sparse or nested sequence values"};
      if (v.elem_type != 0 && !dtype_is_supported(v.elem_type))
        return {Outcome::Unsupported, "element type " + onnx_type_name(v.elem_type)};
    }
  try {
    SessionOptions options;
    options.device = opt.device;
    Session session(model.graph, options);
    // Each data set runs twice on the session: the second run hands out what the first folded (constant nodes).
    for (const fs::path& set : sorted_entries(dir, "test_data_set_"))
      for (int pass = 0; pass < 2; ++pass) {
        TensorMap feeds;
        ValueMap values;
        const auto inputs = sorted_entries(set, "input_");
        if (inputs.size() > graph.inputs.size()) return {Outcome::Failed, "more input files than graph inputs"};
        for (size_t i = 0; i < inputs.size(); ++i) {
          const ValueInfo& in = graph.inputs[i];
          if (in.boxed)
            values[in.name] = load_value_pb(inputs[i], in);
          else
            feeds[in.name] = load_tensor_pb(inputs[i]);
        }
        // Inputs without a data file are omitted optional inputs.
        TensorMap got = session.run(feeds, {}, nullptr, nullptr, nullptr, &values);
        const auto outputs = sorted_entries(set, "output_");
        for (size_t i = 0; i < outputs.size() && i < graph.outputs.size(); ++i) {
          const ValueInfo& out = graph.outputs[i];
          std::string diff;
          if (out.boxed) {
            auto v = values.find(out.name);
            diff = compare_values(out.name, *load_value_pb(outputs[i], out),
                                  v == values.end() ? nullptr : v->second.get(), opt);
          } else if (got.count(out.name)) {
            diff = compare(out.name, load_tensor_pb(outputs[i]), got.at(out.name), opt);
          } else {
            diff = "output '" + out.name + "' is not a tensor";
          }
          if (!diff.empty())
            return {Outcome::Failed, set.filename().string() + (pass ? " (second run)" : "") + ": " + diff};
        }
      }
  } catch (const UnsupportedType& e) {
    return {Outcome::Unsupported, std::string("element type: ") + e.what()};
  } catch (const Error& e) {
    return {Outcome::Failed, e.what()};
  }
  return {};
}

// "element type: <file>: node 'x' (Cast): element type float8e4m3fn is not supported" -> "element type float8e4m3fn"
std::string unsupported_key(const std::string& reason) {
  static const std::regex type_re("element type ([a-z0-9#]+)");
  std::smatch m;
  if (reason.rfind("op ", 0) != 0 && std::regex_search(reason, m, type_re)) return "element type " + m[1].str();
  return reason;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc) opt.filter = argv[++i];
    else if (arg == "--verbose" || arg == "-v") opt.verbose = true;
    else if (arg == "--device" && i + 1 < argc) opt.device = argv[++i];
    else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: mpaudit_conformance NODE_TEST_DIR [--filter REGEX] [--verbose] [--device cpu|fake]\n"
                   "  Runs onnx/backend/test/data/node cases; --verbose prints every case's outcome.\n"
                   "  --device fake runs every node on the test device (tests/support/fake_backend.h), behind transfers.\n";
      return 0;
    } else opt.root = arg;
  }
  if (opt.device == "fake") {
    std::set<std::string> every_op;
    for (const OpRegistry::Entry& e : OpRegistry::instance().entries()) every_op.insert(e.op_type);
    mpa::testing::FakeBackend::instance().allow(std::move(every_op));
  }
  if (opt.root.empty() || !fs::is_directory(opt.root)) {
    std::cerr << "mpaudit_conformance: give the onnx node test directory\n";
    return 2;
  }
  const std::regex filter(opt.filter);
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(opt.root))
    if (entry.is_directory() && std::regex_search(entry.path().filename().string(), filter)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());

  int passed = 0, failed = 0, unsupported = 0;
  std::map<std::string, int> unsupported_counts;
  std::vector<std::pair<std::string, std::string>> failures;
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    const CaseResult r = run_case(dir, opt);
    switch (r.outcome) {
      case Outcome::Passed: ++passed; break;
      case Outcome::Failed: ++failed; failures.emplace_back(name, r.reason); break;
      case Outcome::Unsupported: ++unsupported; ++unsupported_counts[unsupported_key(r.reason)]; break;
    }
    if (opt.verbose)
      std::cout << (r.outcome == Outcome::Passed ? "PASS " : r.outcome == Outcome::Failed ? "FAIL " : "UNSUP ") << name
                << (r.reason.empty() ? "" : "  " + r.reason) << "\n";
  }
  std::vector<std::pair<std::string, int>> table(unsupported_counts.begin(), unsupported_counts.end());
  std::sort(table.begin(), table.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (!table.empty()) {
    std::cout << "unsupported (cases) by reason:\n";
    for (const auto& [reason, count] : table) std::printf("  %5d  %s\n", count, reason.c_str());
  }
  for (const auto& [name, reason] : failures) std::cout << "FAILED " << name << ": " << reason << "\n";
  std::cout << "onnx-node-tests: " << passed << " passed, " << failed << " failed, " << unsupported << " unsupported\n";
  if (opt.device == "fake") {
    const auto counts = mpa::testing::FakeBackend::instance().counts();
    std::cout << "on the fake device: " << counts.runs << " node runs, " << counts.uploads << " uploads, "
              << counts.downloads << " downloads, " << counts.overruns << " buffer overruns\n";
    if (counts.runs == 0 || counts.overruns > 0) return 1;
  }
  return failed == 0 ? 0 : 1;
}
