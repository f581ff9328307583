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

// Attribute values and shapes whose arithmetic would wrap an int64 or divide by zero: each is refused by
// name (or, where the op is defined on them, computed), under `run` and `audit` alike.
TEST(BadInput, ExtremeAttributesAndShapes) {
  TempDir dir;
  const int64_t huge = int64_t{1} << 62;
  {
    ModelBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {1, 8, 2, 2});
    ModelBuilder::set_int(b.node("DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", huge);
    b.output("y");
    b.save(dir / "d2s.onnx");
  }
  {
    ModelBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {1, 1, 4, 4});
    b.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
    onnx::NodeProto& conv = b.node("Conv", {"x", "w"}, {"y"}, "dilated");
    ModelBuilder::set_string(conv, "auto_pad", "SAME_LOWER");
    ModelBuilder::set_ints(conv, "dilations", {huge, huge});
    b.output("y");
    b.save(dir / "dilated.onnx");
  }
  {
    ModelBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 3});
    ModelBuilder::set_string(b.node("Einsum", {"x"}, {"y"}, "diagonal"), "equation", "ij->ii");
    b.output("y");
    b.save(dir / "einsum.onnx");
  }
  for (const char* command : {"run", "audit"}) {
    SCOPED_TRACE(command);
    const std::string tail = std::string(command) == "run" ? " --random-inputs" : " --quiet";
    expect_clean_error(run_cli(dir, std::string(command) + " " + (dir / "d2s.onnx").string() + tail),
                       {"d2s.onnx", "node 'd2s' (DepthToSpace)", "blocksize"});
    expect_clean_error(run_cli(dir, std::string(command) + " " + (dir / "dilated.onnx").string() + tail),
                       {"dilated.onnx", "node 'dilated' (Conv)", "dilations"});
    expect_clean_error(run_cli(dir, std::string(command) + " " + (dir / "einsum.onnx").string() + tail),
                       {"einsum.onnx", "node 'diagonal' (Einsum)", "appears twice"});
  }
  // 2^31 x 2^31 floats: numel fits, bytes would wrap (at 2^64: the budget's count saturates there).
  expect_clean_error(run_cli(dir, run_args(dir / "einsum.onnx", "--random-inputs --shape x=2147483648x2147483648")),
                     {"input 'x'", "16.0 EiB", "memory budget"});
}

// Conv and the normalisations over zero channels: empty sums and no group to divide by.
TEST(BadInput, ZeroChannelsRunToTheirDefinedResult) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 0, 4, 4});
  b.initializer("w", {2, 0, 3, 3}, {});
  b.initializer("bias", {2}, {0.5f, -1.f});
  b.initializer("empty", {0}, {});
  b.node("Conv", {"x", "w", "bias"}, {"y"}, "conv");
  b.node("InstanceNormalization", {"x", "empty", "empty"}, {"z"}, "norm");
  b.output("y", onnx::TensorProto::FLOAT, {1, 2, 2, 2});
  b.output("z", onnx::TensorProto::FLOAT, {1, 0, 4, 4});
  b.save(dir / "zero.onnx");
  const CliResult r = run_cli(dir, run_args(dir / "zero.onnx", "--random-inputs --save-outputs " + (dir / "out").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mpa::Tensor y = mpa::read_npy(dir / "out" / "y.npy");
  ASSERT_EQ(y.shape(), (mpa::Shape{1, 2, 2, 2}));
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], i < 4 ? 0.5f : -1.f);
  EXPECT_EQ(run_cli(dir, "audit " + (dir / "zero.onnx").string() + " --quiet").exit_code, 0);
}

// .npy headers are read strictly, and an .npz entry's claimed size must fit the bytes stored for it.
TEST(BadInput, NpyHeadersAndNpzSizesAreCheckedBeforeUse) {
  TempDir dir;
  relu_model().save(dir / "m.onnx");
  auto npy_with_shape = [](const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    header.resize(((header.size() + 11) / 64 + 1) * 64 - 11, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xFF);
    bytes += static_cast<char>(header.size() >> 8);
    return bytes + header + std::string(16, '\0');
  };
  for (const char* shape : {"(1, x, 4)", "(1.5, 4)", "(1 4)", "(1,,4)", "(-1, 4)"}) {
    SCOPED_TRACE(shape);
    write_whole_file(dir / "odd.npy", npy_with_shape(shape));
    expect_clean_error(run_cli(dir, run_args(dir / "m.onnx", "--input x=" + (dir / "odd.npy").string())),
                       {"odd.npy", "shape"});
  }
  write_whole_file(dir / "ok.npy", npy_with_shape("(1, 4)"));
  EXPECT_EQ(run_cli(dir, run_args(dir / "m.onnx", "--input x=" + (dir / "ok.npy").string())).exit_code, 0);
  // A long header of spaces (numpy reads it once its size limit is raised) is no stack hazard.
  write_whole_file(dir / "spaces.npy", npy_with_shape("(1," + std::string(30000, ' ') + "4)"));
  EXPECT_EQ(run_cli(dir, run_args(dir / "m.onnx", "--input x=" + (dir / "spaces.npy").string())).exit_code, 0);
}

// Messages stay on one line whatever the model's names hold; option errors have the usual prefix.
TEST(BadInput, ErrorsAreOneLineWhateverTheNames) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.int64_initializer("shape", {1}, {7});
  b.node("Reshape", {"x", "shape"}, {"y"}, "two\nlines");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"two\\nlines", "Reshape"});
  expect_clean_error(run_cli(dir, "audit " + (dir / "m.onnx").string() + " --seed x"), {"--seed"});
  // Two outputs that would share a file name are refused, not written over each other.
  ModelBuilder twins;
  twins.input("x", onnx::TensorProto::FLOAT, {1, 4});
  twins.node("Relu", {"x"}, {"a/b"}, "first");
  twins.node("Relu", {"x"}, {"a_b"}, "second");
  twins.output("a/b");
  twins.output("a_b");
  twins.save(dir / "twins.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "twins.onnx", "--random-inputs --save-outputs " + (dir / "out").string())),
                     {"'a/b'", "'a_b'", "a_b.npy"});
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

// Issue 19, strict model validation: what was accepted silently is refused in one line naming the node,
// attribute or value.
TEST(BadInput, AnAttributeGivenTwiceOnANode) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  onnx::NodeProto& n = b.node("Softmax", {"x"}, {"y"}, "soft");
  ModelBuilder::set_int(n, "axis", 1);
  ModelBuilder::set_int(n, "axis", 0);
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")),
                     {"m.onnx", "node 'soft'", "attribute 'axis' is given twice"});
}

TEST(BadInput, AnAttributeOfTheWrongTypeIsNotReadAsAnother) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  onnx::NodeProto& n = b.node("Softmax", {"x"}, {"y"}, "soft");
  auto* a = n.add_attribute();  // a float axis was read as integer 0 before
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.f);
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")),
                     {"node 'soft'", "attribute 'axis' is FLOAT, expected INT"});
}

TEST(BadInput, AGraphInputDeclaredTwice) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Add", {"x", "x"}, {"y"}, "add");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "graph input 'x' is declared twice"});
}

TEST(BadInput, ADeclaredDimBelowMinusOne) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.model()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(-3);
  b.node("Relu", {"x"}, {"y"}, "act");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")), {"m.onnx", "'x' declares dimension -3"});
  ModelBuilder paddle;  // -1, as older exporters write a dynamic dim, still reads as dynamic
  paddle.input("x", onnx::TensorProto::FLOAT, {2, 3});
  paddle.model()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(-1);
  paddle.node("Relu", {"x"}, {"y"}, "act");
  paddle.output("y");
  paddle.save(dir / "p.onnx");
  EXPECT_EQ(run_cli(dir, run_args(dir / "p.onnx")).exit_code, 0);
}

// The runtime holds sequences, but the command line gives tensors only: refused naming the input and its type.
TEST(BadInput, SequenceTypedGraphInputsTakeNoTensor) {
  TempDir dir;
  ModelBuilder b;
  onnx::ValueInfoProto* s = b.model().mutable_graph()->add_input();
  s->set_name("s");
  s->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  b.node("Identity", {"s"}, {"y"}, "id");
  b.output("y");
  b.save(dir / "m.onnx");
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx")),
                     {"input 's' is a sequence(tensor(float32))", "a tensor cannot stand for a sequence"});
  mpa::write_npy(dir / "s.npy", mpa::Tensor::from_vector<float>({1, 2}, {2}));
  expect_clean_error(run_cli(dir, run_args(dir / "m.onnx", "--input s=" + (dir / "s.npy").string())),
                     {"input 's' expects sequence(tensor(float32)), got a tensor"});
}

// Issue 19, strict options: an input given twice, an empty output path.
TEST(BadInput, TheSameInputTwiceAndEmptyOutputPaths) {
  TempDir dir;
  relu_model().save(dir / "m.onnx");
  const std::string model = (dir / "m.onnx").string();
  mpa::write_npy(dir / "x.npy", mpa::Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4}));
  const std::string x = " --input x=" + (dir / "x.npy").string();
  expect_clean_error(run_cli(dir, "run " + model + x + x), {"--input x: given twice"});
  expect_clean_error(run_cli(dir, "audit " + model + " --random-inputs --json ''"), {"--json", "empty path"});
  expect_clean_error(run_cli(dir, "run " + model + " --random-inputs --save-outputs ''"),
                     {"--save-outputs", "empty path"});
  expect_clean_error(run_cli(dir, "run " + model + " --random-inputs --save-inputs ''"),
                     {"--save-inputs", "empty path"});
}

// Issue 19, strict numeric options: read exactly and range-checked, never clamped to the type's limit.
TEST(BadInput, CountingOptionsAreReadExactlyAndRangeChecked) {
  TempDir dir;
  relu_model().save(dir / "m.onnx");
  const std::string audit = "audit " + (dir / "m.onnx").string() + " --quiet ";
  expect_clean_error(run_cli(dir, audit + "--samples 99999999999999999999"), {"--samples", "out of range"});
  expect_clean_error(run_cli(dir, audit + "--samples 4294967296"), {"--samples", "out of range"});
  expect_clean_error(run_cli(dir, audit + "--samples 1e3"), {"--samples", "not a whole number"});
  expect_clean_error(run_cli(dir, audit + "--seed -1"), {"--seed", "out of range"});
  expect_clean_error(run_cli(dir, audit + "--threads 100000"), {"--threads", "out of range"});
  expect_clean_error(run_cli(dir, "run " + (dir / "m.onnx").string() + " --random-inputs --repeat 2x"),
                     {"--repeat", "not a whole number"});
  EXPECT_EQ(run_cli(dir, audit + "--samples 3 --seed 9223372036854775807 --threads 1").exit_code, 0);
}
