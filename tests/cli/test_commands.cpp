// The CLI's normal paths: --version, inspect, run with every input source, audit input distributions.
#include <gtest/gtest.h>

#include "io/npy.h"
#include "support/run_cli.h"

using namespace mpa::test;

namespace {

ModelBuilder two_input_model() {
  ModelBuilder b;
  b.input("a", onnx::TensorProto::FLOAT, {-1, 3});
  b.input("ids", onnx::TensorProto::INT64, {2});
  b.initializer("table", {10, 3}, std::vector<float>(30, 0.5f));
  b.node("Gather", {"table", "ids"}, {"rows"}, "lookup");
  b.node("Add", {"a", "rows"}, {"y"}, "add");
  b.output("y");
  return b;
}

}  // namespace

TEST(Commands, VersionPrintsTheToolName) {
  TempDir dir;
  const CliResult r = run_cli(dir, "--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("mpaudit ", 0), 0u) << r.out;
}

TEST(Commands, InspectListsOpsParametersInputsAndUnsupportedOps) {
  TempDir dir;
  ModelBuilder b = two_input_model();
  b.node("Frobnicate", {"y"}, {"z"}, "mystery");
  b.output("z");
  b.save(dir / "m.onnx");
  const CliResult r = run_cli(dir, "inspect " + (dir / "m.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* fragment : {"a: float32 Nx3", "ids: int64 2", "parameters: 30", "Gather", "Add",
                               "operator Frobnicate is not supported"})
    EXPECT_NE(r.out.find(fragment), std::string::npos) << "missing '" << fragment << "' in:\n" << r.out;
}

TEST(Commands, RunReadsNpzPbFilesAndSampleFolders) {
  TempDir dir;
  two_input_model().save(dir / "m.onnx");
  // A sample folder in the ONNX test-data layout: input_0.pb, input_1.pb by position.
  std::filesystem::create_directories(dir / "samples" / "test_data_set_0");
  auto write_pb = [&](const std::filesystem::path& path, const std::string& name, int type, std::vector<int64_t> dims,
                      auto fill) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(type);
    for (int64_t d : dims) t.add_dims(d);
    fill(t);
    write_whole_file(path, t.SerializeAsString());
  };
  write_pb(dir / "samples" / "test_data_set_0" / "input_0.pb", "", onnx::TensorProto::FLOAT, {2, 3}, [](auto& t) {
    for (int i = 0; i < 6; ++i) t.add_float_data(static_cast<float>(i));
  });
  write_pb(dir / "samples" / "test_data_set_0" / "input_1.pb", "", onnx::TensorProto::INT64, {2}, [](auto& t) {
    t.add_int64_data(1);
    t.add_int64_data(9);
  });
  CliResult r = run_cli(dir, "run " + (dir / "m.onnx").string() + " --inputs " + (dir / "samples").string() +
                                 " --save-outputs " + (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(mpa::read_npy(dir / "out" / "y.npy").to_double_vector(), (std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}));
  // The same sample from --input files.
  r = run_cli(dir, "run " + (dir / "m.onnx").string() + " --input a=" +
                       (dir / "samples" / "test_data_set_0" / "input_0.pb").string() + " --input ids=" +
                       (dir / "samples" / "test_data_set_0" / "input_1.pb").string() + " --repeat 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("timing: load_ms="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runs=3 median_ms="), std::string::npos) << r.out;
}

TEST(Commands, AuditRandomInputsFollowTheirDistributions) {
  TempDir dir;
  two_input_model().save(dir / "m.onnx");
  // Token ids beyond the table would fail Gather: the int range keeps them valid.
  const CliResult ok = run_cli(dir, "audit " + (dir / "m.onnx").string() +
                                        " --samples 3 --dist ids=int:0,9 --dist a=uniform:-1,1 --shape a=2x3 --quiet");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const CliResult bad = run_cli(dir, "audit " + (dir / "m.onnx").string() + " --samples 3 --dist ids=int:10,20 --quiet");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("node 'lookup' (Gather)"), std::string::npos) << bad.err;
  const CliResult typo = run_cli(dir, "audit " + (dir / "m.onnx").string() + " --dist ids=poisson:1,2 --quiet");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("unknown distribution 'poisson'"), std::string::npos) << typo.err;
}

// Progress on a pipe (a CI log): plain lines at the period asked for, a last one at the end; none with
// --quiet. (On a terminal the same progress is a bar redrawn in place.)
TEST(Commands, ProgressIsPlainLinesWhenStderrIsNotATerminal) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y");
  b.save(dir / "m.onnx");
  const std::string model = (dir / "m.onnx").string();
  const CliResult r = run_cli(dir, "audit " + model + " --samples 3 --progress-every 0 --json " + (dir / "a.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("audit: 100% (3 of 3 node runs)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no bar redrawn on a pipe";
  const CliResult quiet =
      run_cli(dir, "audit " + model + " --samples 3 --progress-every 0 --quiet --json " + (dir / "b.json").string());
  EXPECT_EQ(quiet.err, "");
  const CliResult merged = run_cli(dir, "merge " + (dir / "a.json").string() + " " + (dir / "a.json").string() +
                                            " -o " + (dir / "m.json").string() + " --progress-every 0");
  EXPECT_NE(merged.err.find("merge: 50% (1 of 2 reports)"), std::string::npos) << merged.err;
  EXPECT_EQ(run_cli(dir, "audit " + model + " --progress-every -1").exit_code, 2);
}

// `mpaudit devices` lists the backends; `--device cpu` is the default's report, byte for byte; an unknown
// device is a one-line error before any work.
TEST(Commands, DevicesAndTheDeviceOption) {
  TempDir dir;
  const CliResult devices = run_cli(dir, "devices");
  EXPECT_EQ(devices.exit_code, 0);
  EXPECT_EQ(devices.out.rfind("cpu     available: host CPU", 0), 0u) << devices.out;
  EXPECT_NE(devices.out.find("\ncuda"), std::string::npos) << devices.out;  // available or not, with the reason
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {8});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y");
  b.save(dir / "m.onnx");
  const std::string model = (dir / "m.onnx").string();
  ASSERT_EQ(run_cli(dir, "audit " + model + " --samples 2 --quiet --json " + (dir / "a.json").string()).exit_code, 0);
  ASSERT_EQ(run_cli(dir, "audit " + model + " --samples 2 --quiet --device cpu --json " + (dir / "b.json").string())
                .exit_code,
            0);
  EXPECT_TRUE(read_whole_file(dir / "a.json") == read_whole_file(dir / "b.json"));
  if (devices.out.find("cuda:0  available") == std::string::npos)
    expect_clean_error(run_cli(dir, "audit " + model + " --device cuda"),
                       {"--device cuda", "not available on this machine"});
  expect_clean_error(run_cli(dir, "run " + model + " --device tpu"), {"--device tpu", "it has: cpu"});
}

// `selftest` needs a device: where CUDA cannot be used it exits 2 with one line saying why, before any work.
TEST(Commands, SelftestWithoutAUsableDeviceSaysWhyInOneLine) {
  TempDir dir;
  const CliResult devices = run_cli(dir, "devices");
  if (devices.out.find("cuda:0  available") != std::string::npos) GTEST_SKIP() << "a CUDA device is here";
  const CliResult r = run_cli(dir, "selftest --device cuda");
  expect_clean_error(r, {"--device cuda", "not available on this machine"});
  expect_clean_error(run_cli(dir, "selftest --device cpu"), {"name a device"});
}
