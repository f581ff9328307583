// LSTM, GRU and RNN against onnxruntime on the cases the ONNX node tests leave out (both directions,
// reverse, per-row sequence lengths, clip, input_forget, custom activations, GRU linear_before_reset 0/1,
// batch-first layout 1 against the layout 0 twin), each run in float and in double (the fp64 reference),
// written by oracles/recurrent_cases.py. MPA_PYTHON and MPA_ORACLE_DIR come from tests/CMakeLists.txt.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "io/npy.h"
#include "model/loader.h"
#include "runtime/session.h"

using namespace mpa;
namespace fs = std::filesystem;

namespace {

// Files of `folder` named <prefix>_<index>_<name>.npy, in index order, as (name, path).
std::vector<std::pair<std::string, fs::path>> numbered(const fs::path& folder, const std::string& prefix) {
  std::map<int, std::pair<std::string, fs::path>> found;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string file = entry.path().stem().string();
    if (file.rfind(prefix + "_", 0) != 0) continue;
    const std::string rest = file.substr(prefix.size() + 1);
    const size_t cut = rest.find('_');
    found[std::stoi(rest.substr(0, cut))] = {rest.substr(cut + 1), entry.path()};
  }
  std::vector<std::pair<std::string, fs::path>> ordered;
  for (auto& [index, value] : found) ordered.push_back(value);
  return ordered;
}

}  // namespace

TEST(RecurrentOracle, LstmGruRnnMatchOnnxruntime) {
  const fs::path dir = fs::temp_directory_path() / ("mpaudit-recurrent-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string command = std::string(MPA_PYTHON) + " " + MPA_ORACLE_DIR + "/recurrent_cases.py " + dir.string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    SCOPED_TRACE(entry.path().filename().string());
    const Model model = load_model(entry.path() / "model.onnx");
    TensorMap feeds;
    for (const auto& [name, path] : numbered(entry.path(), "input")) feeds[name] = read_npy(path);
    // In float, and in double as the fp64 reference computes them (same cells, element type double).
    SessionOptions in_double;
    in_double.precision = Format::FP64;
    const TensorMap got = Session(model.graph).run(feeds);
    const TensorMap got_double = Session(model.graph, in_double).run(feeds);
    for (const auto& [name, path] : numbered(entry.path(), "expected")) {
      const Tensor expected = read_npy(path);
      const Tensor &actual = got.at(name), &actual_double = got_double.at(name);
      ASSERT_EQ(actual.shape(), expected.shape()) << name;
      ASSERT_EQ(actual_double.shape(), expected.shape()) << name;
      ASSERT_EQ(actual_double.dtype(), DType::Float64) << name;
      for (int64_t i = 0; i < expected.numel(); ++i) {
        const float e = expected.data<float>()[i], a = actual.data<float>()[i];
        EXPECT_NEAR(a, e, 1e-5f + 1e-4f * std::fabs(e)) << name << "[" << i << "]";
        EXPECT_NEAR(actual_double.data<double>()[i], e, 1e-5 + 1e-4 * std::fabs(e))
            << name << "[" << i << "] in double";
      }
    }
    ++cases;
  }
  fs::remove_all(dir);
  EXPECT_EQ(cases, 12);
}
