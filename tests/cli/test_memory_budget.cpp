// Issue 19: the memory budget (--max-memory). Every size that comes from outside is checked against it before
// anything is allocated or decoded, and a model whose values outgrow it stops with one line naming the node:
// exit code 2, never the OOM killer. On main before the budget these cases ran until the machine gave out
// (a Loop stacking 1 MiB per trip for 2^20 trips; an Expand to 100000x100000) or were refused only beyond
// 256 TiB. A fixed budget makes them independent of the test machine's memory.
#include <gtest/gtest.h>
#include <zip.h>

#include "io/npy.h"
#include "support/media_files.h"
#include "support/model_builder.h"
#include "support/run_cli.h"

using namespace mpa::test;

namespace {

std::string path(const TempDir& dir, const std::string& name) { return (dir / name).string(); }

// A Loop of 2^20 trips whose body stacks x expanded to 1 MiB (2^18 floats) as its scan output `history`.
ModelBuilder growing_loop() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1});
  b.int64_initializer("trips", {}, {int64_t{1} << 20});
  b.int64_initializer("slice_shape", {1}, {int64_t{1} << 18});
  SubgraphBuilder body("body");
  body.input("iter", onnx::TensorProto::INT64, {});
  body.input("cond_in", onnx::TensorProto::BOOL, {});
  body.node("Identity", {"cond_in"}, {"cond_out"}, "keep_going");
  body.node("Expand", {"x", "slice_shape"}, {"slice"}, "widen");
  body.output("cond_out", onnx::TensorProto::BOOL);
  body.output("slice", onnx::TensorProto::FLOAT, {int64_t{1} << 18});
  onnx::NodeProto& loop = b.node("Loop", {"trips", ""}, {"history"}, "loop");
  ModelBuilder::set_graph(loop, "body", body.graph());
  b.output("history");
  return b;
}

// A Loop whose carried state doubles every trip (state = Concat(state, state)): the body's Concat outgrows
// the budget.
ModelBuilder doubling_loop() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1024});
  b.int64_initializer("trips", {}, {64});
  SubgraphBuilder body("body");
  body.input("iter", onnx::TensorProto::INT64, {});
  body.input("cond_in", onnx::TensorProto::BOOL, {});
  body.input("state_in", onnx::TensorProto::FLOAT, {-1});
  body.node("Identity", {"cond_in"}, {"cond_out"}, "keep_going");
  ModelBuilder::set_int(body.node("Concat", {"state_in", "state_in"}, {"state_out"}, "double"), "axis", 0);
  body.output("cond_out", onnx::TensorProto::BOOL);
  body.output("state_out", onnx::TensorProto::FLOAT, {-1});
  onnx::NodeProto& loop = b.node("Loop", {"trips", "", "x"}, {"state"}, "loop");
  ModelBuilder::set_graph(loop, "body", body.graph());
  b.output("state");
  return b;
}

// y = Expand(x, [100000, 100000]): 37 GiB of float32 from a 4-byte input.
ModelBuilder huge_expand() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1});
  b.int64_initializer("shape", {2}, {100000, 100000});
  b.node("Expand", {"x", "shape"}, {"y"}, "big");
  b.output("y");
  return b;
}

ModelBuilder identity_of(const std::vector<int64_t>& dims) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, dims);
  b.node("Identity", {"x"}, {"y"}, "copy");
  b.output("y");
  return b;
}

}  // namespace

TEST(MemoryBudget, LoopScanGrowthStopsNamingTheLoopAndOutput) {
  TempDir dir;
  growing_loop().save(dir / "grow.onnx");
  const CliResult r = run_cli(dir, "run " + path(dir, "grow.onnx") + " --input x=1 --max-memory 64MiB");
  expect_clean_error(r, {"grow.onnx", "node 'loop' (Loop)", "stacking scan output 'history'", "iterations so far",
                         "memory budget", "64.0 MiB", "--max-memory"});
}

TEST(MemoryBudget, ModelValuesBeyondTheBudgetNameTheNode) {
  TempDir dir;
  doubling_loop().save(dir / "double.onnx");
  expect_clean_error(run_cli(dir, "run " + path(dir, "double.onnx") + " --random-inputs --max-memory 16M"),
                     {"double.onnx", "node 'loop' (Loop)", "node 'double' (Concat)", "memory budget", "16.0 MiB"});
  huge_expand().save(dir / "expand.onnx");
  expect_clean_error(run_cli(dir, "run " + path(dir, "expand.onnx") + " --input x=1 --max-memory 1G"),
                     {"expand.onnx", "node 'big' (Expand)", "100000x100000", "37.3 GiB", "memory budget", "1.0 GiB"});
  // The audit's runs are held to the same budget.
  expect_clean_error(run_cli(dir, "audit " + path(dir, "expand.onnx") + " --input x=1 --max-memory 1G --quiet"),
                     {"expand.onnx", "node 'big' (Expand)", "memory budget"});
}

TEST(MemoryBudget, DeclaredShapesAndShapeOptionAreCheckedBeforeAllocating) {
  TempDir dir;
  identity_of({100000, 100000}).save(dir / "declared.onnx");
  expect_clean_error(
      run_cli(dir, "run " + path(dir, "declared.onnx") + " --random-inputs --max-memory 1G"),
      {"declared.onnx", "input 'x'", "random values of shape 100000x100000", "37.3 GiB", "memory budget"});
  identity_of({-1, 2}).save(dir / "symbolic.onnx");
  expect_clean_error(
      run_cli(dir, "audit " + path(dir, "symbolic.onnx") + " --random-inputs --shape x=10000000000x2 --max-memory 2G"),
      {"symbolic.onnx", "input 'x'", "10000000000x2", "74.5 GiB", "2.0 GiB"});
}

TEST(MemoryBudget, ArrayAndImageFilesAreCheckedFromTheirHeaders) {
  TempDir dir;
  identity_of({-1, 1024}).save(dir / "any.onnx");
  mpa::write_npy(dir / "x.npy", mpa::Tensor::zeros(mpa::DType::Float32, {1024, 1024}));
  expect_clean_error(
      run_cli(dir, "run " + path(dir, "any.onnx") + " --input x=" + path(dir, "x.npy") + " --max-memory 2MiB"),
      {"x.npy", "1024x1024 of float32", "4.0 MiB", "memory budget", "2.0 MiB"});
  ModelBuilder image;
  image.input("image", onnx::TensorProto::FLOAT, {1, 3, -1, -1});
  image.node("Identity", {"image"}, {"y"}, "copy");
  image.output("y");
  image.save(dir / "image.onnx");
  write_whole_file(dir / "big.png", png_bytes(1024, 1024, 3, std::vector<uint8_t>(1024 * 1024 * 3, 90)));
  const std::string run_image = "run " + path(dir, "image.onnx") + " --input image=" + path(dir, "big.png");
  expect_clean_error(run_cli(dir, run_image + " --max-memory 4MiB"),
                     {"big.png", "decoding its 1024x1024 pixels", "15.0 MiB", "memory budget"});
  expect_clean_error(run_cli(dir, run_image + " --preprocess image:resize=8000x8000 --max-memory 1G"),
                     {"big.png", "an image of 8000x8000 pixels", "1.4 GiB", "memory budget"});
  EXPECT_EQ(run_cli(dir, run_image + " --preprocess image:resize=64x64 --max-memory 64M").exit_code, 0);
}

// A 64 KiB .npz whose member inflates to 64 MiB: its header is read first and the member refused before
// anything is inflated (before the budget, entries up to 16 GiB were accepted).
TEST(MemoryBudget, AnNpzMemberIsCheckedBeforeItIsInflated) {
  TempDir dir;
  identity_of({-1}).save(dir / "vector.onnx");
  const std::string npy = mpa::serialize_npy(mpa::Tensor::zeros(mpa::DType::Float32, {int64_t{1} << 24}));
  int error = 0;
  zip_t* archive = zip_open(path(dir, "bomb.npz").c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  ASSERT_NE(archive, nullptr);
  zip_source_t* source = zip_source_buffer(archive, npy.data(), npy.size(), 0);
  const zip_int64_t entry = zip_file_add(archive, "x.npy", source, ZIP_FL_OVERWRITE);
  ASSERT_GE(entry, 0);
  ASSERT_EQ(zip_set_file_compression(archive, static_cast<zip_uint64_t>(entry), ZIP_CM_DEFLATE, 9), 0);
  ASSERT_EQ(zip_close(archive), 0);
  ASSERT_LT(std::filesystem::file_size(dir / "bomb.npz"), 1u << 20);
  const std::string run = "run " + path(dir, "vector.onnx") + " --inputs " + path(dir, "bomb.npz");
  expect_clean_error(run_cli(dir, run + " --max-memory 32MiB"),
                     {"bomb.npz[x]", "16777216 of float32", "64.0 MiB", "memory budget"});
  EXPECT_EQ(run_cli(dir, run + " --max-memory 1G").exit_code, 0);
}

TEST(MemoryBudget, TheOptionIsReadStrictly) {
  TempDir dir;
  identity_of({2, 2}).save(dir / "m.onnx");
  const std::string run = "run " + path(dir, "m.onnx") + " --random-inputs --max-memory ";
  for (const char* bad : {"8X", "0", "-1G", "150%", "1e9", "G", "", "1.5.2G"})
    expect_clean_error(run_cli(dir, run + "'" + bad + "'"), {"--max-memory"});
  for (const char* good : {"8G", "512MiB", "1.5GiB", "50%", "1048576", "64KB"})
    EXPECT_EQ(run_cli(dir, run + good).exit_code, 0) << good;
}
