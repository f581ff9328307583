// The backend seam (backends/backend.h): the CPU backend is there and available, supports exactly the
// nodes that have a kernel (saying why not for the others), and `--device` names backends strictly.
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "common/error.h"

using namespace mpa;

TEST(Backends, TheCpuBackendIsFirstAndAvailable) {
  ASSERT_FALSE(backends().empty());
  const Backend& cpu = *backends().front();
  EXPECT_EQ(cpu.name(), "cpu");
  EXPECT_TRUE(cpu.available().ok);
  EXPECT_NE(cpu.describe().find("host CPU"), std::string::npos);
  EXPECT_EQ(&backend_named("cpu"), &cpu);
}

TEST(Backends, TheCpuSupportsWhatHasAKernelAndSaysWhyNot) {
  const Backend& cpu = backend_named("cpu");
  Node relu;
  relu.op_type = "Relu";
  EXPECT_TRUE(cpu.supports(relu, 14, ExecConfig{}).ok);
  Node unknown;
  unknown.op_type = "NoSuchOp";
  const Support no = cpu.supports(unknown, 17, ExecConfig{});
  EXPECT_FALSE(no.ok);
  EXPECT_NE(no.reason.find("NoSuchOp"), std::string::npos) << no.reason;
  Node gelu;  // an ONNX op since opset 20
  gelu.op_type = "Gelu";
  EXPECT_TRUE(cpu.supports(gelu, 20, ExecConfig{}).ok);
  const Support too_old = cpu.supports(gelu, 17, ExecConfig{});
  EXPECT_FALSE(too_old.ok);
  EXPECT_NE(too_old.reason.find("opset 17"), std::string::npos) << too_old.reason;
}

TEST(Backends, AnUnknownDeviceFailsNamingTheBackendsThereAre) {
  try {
    backend_named("tpu");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--device tpu: no such backend in this build (it has: cpu", 0), 0u)
        << e.what();
  }
}

// The CUDA backend is a module: where it is not found (this test binary's folder has none), `--device cuda`
// fails in one line saying so and where it looked, and `cuda` is listed as unavailable with that reason.
TEST(Backends, AMissingModuleIsNamedWithWhereItWasLookedFor) {
  try {
    backend_named("cuda:0");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(
        what.rfind(
            "--device cuda:0: not available on this machine: module libmpaudit_backend_cuda.so not found (looked for ",
            0),
        0u)
        << what;
    EXPECT_NE(what.find("/libmpaudit_backend_cuda.so"), std::string::npos) << what;
  }
  bool listed = false;
  for (const Backend* b : backends())
    if (b->name() == "cuda")
      listed = !b->available().ok && b->available().reason.find("not found") != std::string::npos;
  EXPECT_TRUE(listed);
}
