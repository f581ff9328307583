// Bad input never crashes mpaudit: each case below must give exit code 2 and a one-line message that
// names the file and, where there is one, the node and op. Runs the real binary (also under ASan/UBSan).
#include <gtest/gtest.h>
#include <random>

#include "io/npy.h"
#include "support/model_builder.h"
#include "support/run_cli.h"

using mpa::test::CliResult;
using mpa::test::expect_clean_error;
using mpa::test::ModelBuilder;
using mpa::test::run_cli;
using mpa::test::TempDir;
using mpa::test::write_whole_file;

namespace {

ModelBuilder relu_model() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.node("Relu", {"x"}, {"y"}, "act");
  b.output("y");
  return b;
}

std::string run_args(const std::filesystem::path& model, const std::string& extra = "--random-inputs") {
  return "run " + model.string() + " " + extra;
}

void add_external(onnx::TensorProto& t, const std::string& location, const std::string& offset,
                  const std::string& length) {
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [k, v] : {std::pair{"location", location}, {"offset", offset}, {"length", length}}) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
}

}  // namespace

TEST(BadInput, MissingFile) {
  TempDir dir;
  expect_clean_error(run_cli(dir, run_args(dir / "nope.onnx")), {"nope.onnx", "no such file"});
}

TEST(BadInput, EmptyFile) {
  TempDir dir;
  write_whole_file(dir / "empty.onnx", "");
  expect_clean_error(run_cli(dir, "inspect " + (dir / "empty.onnx").string()), {"empty.onnx", "empty file"});
}

TEST(BadInput, TruncatedModel) {
  TempDir dir;
  ModelBuilder b = relu_model();
  b.initializer("w", {64}, std::vector<float>(64, 1.f));
  const std::string bytes = b.bytes();
  write_whole_file(dir / "cut.onnx", bytes.substr(0, bytes.size() / 2));
  expect_clean_error(run_cli(dir, run_args(dir / "cut.onnx")), {"cut.onnx", "not an ONNX model"});
}

TEST(BadInput, RandomBytesAndTextFiles) {
  TempDir dir;
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    std::string bytes(static_cast<size_t>(64 + i * 97), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    write_whole_file(dir / "random.onnx", bytes);
    const CliResult r = run_cli(dir, run_args(dir / "random.onnx"));
    EXPECT_EQ(r.exit_code, 2) << "random file " << i << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  write_whole_file(dir / "notes.onnx", "name: this is a text file\nnot a model at all\n");
  expect_clean_error(run_cli(dir, run_args(dir / "notes.onnx")), {"notes.onnx", "not an ONNX model"});
}

TEST(BadInput, MissingValueReference) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.node("Add", {"x", "missing_bias"}, {"y"}, "add_bias");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "node 'add_bias' (Add)", "'missing_bias'"});
}

TEST(BadInput, Cycle) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.node("Add", {"x", "c"}, {"a"}, "first");
  b.node("Relu", {"a"}, {"c"}, "second");
  b.output("c");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "cycle", "(Add)"});
}

TEST(BadInput, UnknownOp) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.node("TotallyNewOp", {"x"}, {"y"}, "novel");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "node 'novel' (TotallyNewOp)", "not supported"});
}

TEST(BadInput, InitializerDeclaresFarMoreDataThanItCarries) {
  TempDir dir;
  ModelBuilder b = relu_model();
  onnx::TensorProto& t = b.initializer("huge", {int64_t{1} << 40}, {});
  t.set_raw_data(std::string(8, '\0'));
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "initializer 'huge'", "8 bytes"});
}

TEST(BadInput, NegativeDims) {
  TempDir dir;
  ModelBuilder b = relu_model();
  b.initializer("neg", {-3, 2}, {1, 2});
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "initializer 'neg'", "negative dimension"});
}

TEST(BadInput, ExternalDataEscapingTheModelFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir / "model");
  write_whole_file(dir / "secret.bin", std::string(16, 'x'));
  ModelBuilder b = relu_model();
  onnx::TensorProto& t = b.initializer("w", {4}, {});
  add_external(t, "../secret.bin", "0", "16");
  b.save(dir / "model" / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "model" / "m.onnx")), {"m.onnx", "initializer 'w'", "escapes the model folder"});
  onnx::TensorProto& abs = *b.graph().mutable_initializer(0);
  abs.mutable_external_data(0)->set_value((dir / "secret.bin").string());
  b.save(dir / "model" / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "model" / "m.onnx")), {"m.onnx", "initializer 'w'", "relative"});
}

TEST(BadInput, ExternalDataRangePastTheEndOfTheFile) {
  TempDir dir;
  write_whole_file(dir / "w.bin", std::string(16, '\0'));
  ModelBuilder b = relu_model();
  onnx::TensorProto& t = b.initializer("w", {4}, {});
  add_external(t, "w.bin", "8", "16");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "initializer 'w'", "runs past the end"});
}

TEST(BadInput, ZeroStrides) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 4, 4});
  b.initializer("w", {1, 1, 2, 2}, {1, 1, 1, 1});
  onnx::NodeProto& conv = b.node("Conv", {"x", "w"}, {"y"}, "conv0");
  ModelBuilder::set_ints(conv, "strides", {0, 0});
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "node 'conv0' (Conv)", "stride"});
}

TEST(BadInput, ImpossibleReshape) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.int64_initializer("shape", {1}, {7});
  b.node("Reshape", {"x", "shape"}, {"y"}, "reshape0");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "node 'reshape0' (Reshape)"});
}

TEST(BadInput, OutOfRangeGatherIndex) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {3, 2});
  b.int64_initializer("idx", {2}, {1, 3});
  b.node("Gather", {"x", "idx"}, {"y"}, "gather0");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "node 'gather0' (Gather)", "3"});
}

TEST(BadInput, NpyThatDoesNotFitTheInput) {
  TempDir dir;
  relu_model().save(dir / "m.onnx");
  mpa::write_npy(dir / "ints.npy", mpa::Tensor::from_vector<int32_t>({1, 2, 3, 4}, {1, 4}));
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx", "--input x=" + (dir / "ints.npy").string())),
                     {"m.onnx", "input 'x'", "float32", "int32"});
  mpa::write_npy(dir / "wide.npy", mpa::Tensor::from_vector<float>({1, 2, 3, 4, 5}, {1, 5}));
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx", "--input x=" + (dir / "wide.npy").string())),
                     {"m.onnx", "input 'x'", "wide.npy", "1x4", "1x5"});
  // audit names the model file too.
  expect_clean_error(
      run_cli(dir, "audit " + (dir / "m.onnx").string() + " --quiet --input x=" + (dir / "wide.npy").string()),
      {"m.onnx", "input 'x'", "wide.npy", "1x4", "1x5"});
  write_whole_file(dir / "junk.npy", "\x93NUMPY garbage");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx", "--input x=" + (dir / "junk.npy").string())), {"junk.npy"});
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx", "--input nosuch=" + (dir / "wide.npy").string())),
                     {"'nosuch' is not an input"});
}

TEST(BadInput, ValidModelRunsAndWritesOutputs) {
  TempDir dir;
  relu_model().save(dir / "m.onnx");
  mpa::write_npy(dir / "x.npy", mpa::Tensor::from_vector<float>({-1, 2, -3, 4}, {1, 4}));
  const CliResult r = run_cli(dir, run_args(dir / "m.onnx", "--input x=" + (dir / "x.npy").string() +
                                                                 " --save-outputs " + (dir / "out").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(mpa::read_npy(dir / "out" / "y.npy").to_double_vector(), (std::vector<double>{0, 2, 0, 4}));
}
