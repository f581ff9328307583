// The backend seam proved with a device that is not the CPU (support/fake_backend.h): nodes the fake supports
// run there and the others fall back to the CPU with a reason; the executor makes every transfer, each
// value moves once per device and is freed after its last reader; subgraph nodes run on the device too;
// the observer sees host tensors and where each node ran; and audits are identical whichever backend ran
// each node, apart from the placement fields.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <map>
#include <sstream>

#include "audit/auditor.h"
#include "common/memory_budget.h"
#include "model/loader.h"
#include "probes/exact_sum.h"
#include "runtime/session.h"
#include "selftest/selftest.h"
#include "support/control_flow_models.h"
#include "support/fake_backend.h"
#include "support/json_schema.h"
#include "support/model_builder.h"

using namespace mpa;
using mpa::testing::FakeBackend;
using mpa::testing::FakeOps;

namespace {

// y = Relu(x) -> Softmax -> + b: Relu and Add on the fake, Softmax (not in its list) on the CPU.
Model chain_model() {
  test::ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2, 8});
  b.initializer("b", {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Softmax", {"r"}, {"s"}, "softmax");
  b.node("Add", {"s", "b"}, {"y"}, "add");
  b.output("y");
  return load_model_from_bytes(b.bytes(), ".", "chain.onnx");
}

Tensor ramp(Shape shape, float step, float start) {
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

SessionOptions on(const std::string& device, Format precision = Format::FP32) {
  SessionOptions options;
  options.device = device;
  options.precision = precision;
  return options;
}

void expect_same_outputs(const TensorMap& cpu, const TensorMap& fake) {
  ASSERT_EQ(cpu.size(), fake.size());
  for (const auto& [name, t] : cpu) {
    ASSERT_TRUE(fake.at(name).device().is_host()) << name << " was not brought back to the host";
    EXPECT_TRUE(same_bits(t, fake.at(name))) << name;
  }
}

class Fake : public ::testing::Test {
 protected:
  void SetUp() override { FakeBackend::instance().reset_counts(); }
  void TearDown() override { EXPECT_EQ(FakeBackend::instance().counts().overruns, 0) << "a kernel wrote past a buffer"; }
  FakeBackend& fake = FakeBackend::instance();
};

}  // namespace

TEST_F(Fake, ItsTensorsAreReadOnTheHostOnlyThroughATransfer) {
  const Tensor host = ramp({3}, 1, 0);
  const Tensor on_fake = fake.upload(host);
  EXPECT_EQ(on_fake.device().name(), "fake:0");
  try {
    (void)on_fake.data<float>();
    FAIL() << "a fake tensor was read on the host";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("on fake:0 was read on the host without a transfer"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(same_bits(fake.download(on_fake), host));
  EXPECT_EQ(&backend_named("fake"), &fake);
  EXPECT_EQ(&backend_of(on_fake.device()), &fake);
}

TEST_F(Fake, SupportedNodesRunThereAndTheOthersFallBackToTheCpuWithTheReason) {
  const Model model = chain_model();
  const Session cpu(model.graph), device(model.graph, on("fake"));
  const ExecConfig& config = device.default_config();
  EXPECT_EQ(device.placement(0, config).backend, &fake);
  const Placement softmax = device.placement(1, config);
  EXPECT_EQ(softmax.backend, &host_backend());
  EXPECT_EQ(softmax.fallback_reason, "fake: Softmax not in allow-list");
  EXPECT_EQ(device.placement(2, config).backend, &fake);
  EXPECT_TRUE(cpu.placement(1, config).fallback_reason.empty());
  const TensorMap feeds = {{"x", ramp({2, 8}, 0.25f, -2)}};
  expect_same_outputs(cpu.run(feeds), device.run(feeds));
  EXPECT_EQ(fake.counts().runs, 2);
}

// x goes up for Relu, Relu's output down for Softmax, Softmax's output and the initializer b up for Add, y
// down: 3 uploads and 2 downloads per run, counted alike by the executor and the device, and every buffer
// of the device is freed once the run is over.
// Per run: x up for Relu, Relu's output down for Softmax (CPU), Softmax's up for Add, y down. The weight b
// goes up once per session and stays there, as a GPU runtime keeps its weights resident.
TEST_F(Fake, TheExecutorMovesEachValueOncePerDeviceFreesItAfterItsLastReaderAndKeepsWeightsResident) {
  const Model model = chain_model();
  const int64_t live_before = fake.counts().live_buffers;
  {
    const Session device(model.graph, on("fake"));
    const TensorMap feeds = {{"x", ramp({2, 8}, 0.25f, -2)}};
    for (int run = 1; run <= 2; ++run) {
      device.run(feeds);
      const Transfers moved = device.transfers();
      EXPECT_EQ(moved.uploads, 2 * run + 1);
      EXPECT_EQ(moved.downloads, 2 * run);
      EXPECT_EQ(moved.bytes_uploaded, (64 + 64) * run + 32);
      EXPECT_EQ(moved.bytes_downloaded, (64 + 64) * run);
      EXPECT_EQ(fake.counts().uploads, moved.uploads);
      EXPECT_EQ(fake.counts().downloads, moved.downloads);
      EXPECT_EQ(fake.counts().live_buffers, live_before + 1) << "only the resident weight";
    }
  }
  EXPECT_EQ(fake.counts().live_buffers, live_before) << "the weight goes with its session";
}

// Where formats meet (a node kept in fp32 amid fp16), the value is converted on the device that holds it
// and moved once.
TEST_F(Fake, MixedPrecisionRunsConvertOnTheDeviceAndGiveTheCpusBits) {
  const Model model = chain_model();
  SessionOptions cpu_options = on("cpu", Format::FP16), fake_options = on("fake", Format::FP16);
  cpu_options.node_precision = fake_options.node_precision = {{"softmax", Format::FP32}};
  const Session cpu(model.graph, cpu_options), device(model.graph, fake_options);
  const TensorMap feeds = {{"x", ramp({2, 8}, 0.37f, -2.9f)}};
  expect_same_outputs(cpu.run(feeds), device.run(feeds));
}

TEST_F(Fake, SubgraphNodesRunOnTheDeviceAndReadOuterValuesMovedThere) {
  for (const Model& model : {test::if_model(), test::loop_model(), test::loop_with_if_model()}) {
    fake.reset_counts();
    const Session cpu(model.graph), device(model.graph, on("fake"));
    const std::string input = model.graph->inputs.front().name;
    const Shape shape = model.graph->inputs.front().dims;
    const TensorMap feeds = {{input, ramp(shape, 0.5f, -0.75f)}};
    expect_same_outputs(cpu.run(feeds), device.run(feeds));
    EXPECT_GT(fake.counts().runs, 0) << "no subgraph node ran on the fake";
    EXPECT_GT(device.transfers().uploads, 0);
  }
}

// The observer reads every value on the host, wherever its node ran, and is told where that was.
TEST_F(Fake, TheObserverSeesHostTensorsAndWhereEachNodeRan) {
  class Record : public ExecObserver {
   public:
    void node_done(size_t, const std::vector<StreamStep>& streams) override {
      const StreamStep& step = streams.front();
      ran_on.emplace_back(step.backend->name());
      for (const Tensor* t : step.outputs) sums.push_back(t->data<float>()[0] + t->data<float>()[t->numel() - 1]);
    }
    std::vector<std::string> ran_on;
    std::vector<float> sums;
  };
  const Model model = chain_model();
  const TensorMap feeds = {{"x", ramp({2, 8}, 0.25f, -2)}};
  Record on_cpu, on_fake;
  Session(model.graph).run_streams(feeds, std::vector<StreamPlan>(1), &on_cpu);
  Session(model.graph, on("fake")).run_streams(feeds, std::vector<StreamPlan>(1), &on_fake);
  EXPECT_EQ(on_fake.ran_on, (std::vector<std::string>{"fake", "cpu", "fake"}));
  EXPECT_EQ(on_cpu.ran_on, (std::vector<std::string>{"cpu", "cpu", "cpu"}));
  EXPECT_EQ(on_cpu.sums, on_fake.sums);
}

namespace {

// An audit's report as JSON without what says where it ran.
nlohmann::json figures_of(const Model& model, const std::vector<TensorMap>& samples, const std::string& device,
                          nlohmann::json* placement = nullptr) {
  AuditOptions options;
  options.targets = {Format::FP16, Format::BF16};
  options.device = device;
  Auditor auditor(model.graph, options);
  for (size_t s = 0; s < samples.size(); ++s) auditor.observe(samples[s], static_cast<int64_t>(s));
  report::Report report;
  report.config.targets = {"fp16", "bf16"};
  report.tool_version = "test";
  report.model_sha256 = std::string(64, '0');
  auditor.fill(report);
  nlohmann::json j = report::to_json(report);
  EXPECT_EQ(test::JsonSchema(MPA_SCHEMA_PATH).violations(j), "") << device;
  if (placement) {
    (*placement)["device"] = j["config"].value("device", nlohmann::json());
    (*placement)["summary"] = j["placement"];
    for (const auto& node : j["nodes"])
      if (node.contains("fallbacks")) (*placement)["fallbacks"][node["name"].get<std::string>()] = node["fallbacks"];
  }
  j.erase("placement");
  j["config"].erase("backend");
  j["config"].erase("device");
  for (auto& node : j["nodes"]) node.erase("fallbacks");
  return j;
}

std::set<std::string> every_registered_op() {
  std::set<std::string> ops;
  for (const OpRegistry::Entry& e : OpRegistry::instance().entries()) ops.insert(e.op_type);
  return ops;
}

// Two samples for the model's first input: ramps of very different scales.
std::vector<TensorMap> ramp_samples(const Model& model) {
  std::vector<TensorMap> samples;
  const ValueInfo& in = model.graph->inputs.front();
  for (int s = 0; s < 2; ++s)
    samples.push_back({{in.name, ramp(in.dims, 0.5f + 1e3f * static_cast<float>(s), -0.75f)}});
  return samples;
}

}  // namespace

TEST_F(Fake, AuditsAreIdenticalWhicheverBackendRanEachNode) {
  const std::vector<std::pair<std::string, Model>> models = {
      {"chain", chain_model()}, {"if", test::if_model()}, {"loop", test::loop_model()},
      {"loop_with_if", test::loop_with_if_model()}};
  for (const auto& [name, model] : models) {
    const std::vector<TensorMap> samples = ramp_samples(model);
    const nlohmann::json cpu = figures_of(model, samples, "cpu");
    nlohmann::json placement;
    EXPECT_EQ(figures_of(model, samples, "fake", &placement), cpu) << name << ", some nodes on the fake";
    EXPECT_EQ(placement["summary"]["backend"], "fake");
    EXPECT_EQ(placement["device"]["description"], FakeBackend::instance().describe());
    EXPECT_EQ(placement["device"]["numerics"]["bf16"]["kernels"], "the CPU's, behind transfers") << placement["device"];
    EXPECT_EQ(placement["device"]["numerics"].size(), 3u) << "reference, fp16, bf16";
    EXPECT_GT(placement["summary"]["uploads"].get<int64_t>(), 0) << name;
    EXPECT_EQ(placement["summary"]["fallback_nodes"].get<int64_t>(), static_cast<int64_t>(placement["fallbacks"].size()));
    FakeOps everything(every_registered_op());
    placement = nlohmann::json::object();
    EXPECT_EQ(figures_of(model, samples, "fake", &placement), cpu) << name << ", every node on the fake";
    EXPECT_EQ(placement["summary"]["fallback_nodes"], 0) << name;
    EXPECT_FALSE(placement.contains("fallbacks")) << name;
  }
}

namespace {

// Two reports' figures alike: integers, strings and structure exactly, floating figures and exact sums
// (written as text) to 1e-9 relative: sums taken in another order differ in their last bits only.
void expect_close(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  const auto near = [&](double x, double y) { EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::fabs(y))) << path; };
  if (a.is_number_float() && b.is_number()) return near(a.get<double>(), b.get<double>());
  if (a.is_string() && b.is_string() && a != b && path.find("/state/sum_") != std::string::npos)
    return near(ExactSum::parse(a.get<std::string>()).value(), ExactSum::parse(b.get<std::string>()).value());
  if (a.type() != b.type() || !(a.is_object() || a.is_array())) {
    EXPECT_EQ(a, b) << path;
    return;
  }
  ASSERT_EQ(a.size(), b.size()) << path;
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) expect_close(a[i], b[i], path + "/" + std::to_string(i));
    return;
  }
  for (const auto& [key, value] : a.items()) {
    ASSERT_TRUE(b.contains(key)) << path << "/" << key;
    expect_close(value, b[key], path + "/" + key);
  }
}

class ProbesOnTheFake {
 public:
  ProbesOnTheFake() { FakeBackend::instance().probe_here(true); }
  ~ProbesOnTheFake() { FakeBackend::instance().probe_here(false); }
  ProbesOnTheFake(const ProbesOnTheFake&) = delete;
  ProbesOnTheFake& operator=(const ProbesOnTheFake&) = delete;
};

}  // namespace

// A device that computes the probes where its values are (as the CUDA backend does): the audit reads its
// tensors there, only the chunks' statistics come back, and the figures are the host's, counts, extremes
// and histograms exactly, sums to their last bits; nodes' values are no longer all downloaded.
TEST_F(Fake, ProbesOnTheDeviceGiveTheHostsFiguresWithoutDownloadingEveryValue) {
  FakeOps everything(every_registered_op());
  const std::vector<std::pair<std::string, Model>> models = {
      {"chain", chain_model()}, {"if", test::if_model()}, {"loop", test::loop_model()}};
  for (const auto& [name, model] : models) {
    const std::vector<TensorMap> samples = ramp_samples(model);
    const nlohmann::json cpu = figures_of(model, samples, "cpu");
    nlohmann::json host_probed, device_probed;
    figures_of(model, samples, "fake", &host_probed);
    nlohmann::json figures;
    {
      ProbesOnTheFake probes;
      figures = figures_of(model, samples, "fake", &device_probed);
    }
    expect_close(figures, cpu, name);
    EXPECT_LT(device_probed["summary"]["downloads"].get<int64_t>(), host_probed["summary"]["downloads"].get<int64_t>())
        << name;
  }
}

// BatchNormalization reads its parameters on the host (OpTraits::host_inputs). Its isolated runs get the
// reference's initializers as the device's resident copies and read the host originals instead of downloading
// them: with every node and probe on the device, no parameter comes down.
TEST_F(Fake, IsolatedRunsReadHostParametersWithoutDownloadingTheirResidentCopies) {
  test::ModelBuilder b(15);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4, 3, 3});
  b.initializer("scale", {4}, {1.5f, 0.5f, 2, 1});
  b.initializer("bias", {4}, {0.25f, -1, 0, 3});
  b.initializer("mean", {4}, {0.1f, 0.2f, -0.3f, 0.4f});
  b.initializer("var", {4}, {1, 2, 0.5f, 4});
  b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  b.output("y");
  const Model model = load_model_from_bytes(b.bytes(), ".", "bn.onnx");
  FakeOps everything(every_registered_op());
  ProbesOnTheFake probes;
  const std::vector<TensorMap> samples = ramp_samples(model);
  nlohmann::json placement;
  expect_close(figures_of(model, samples, "fake", &placement), figures_of(model, samples, "cpu"), "bn");
  // Only values the size of y (36 floats) come down, not the 4-float parameters.
  const int64_t downloads = placement["summary"]["downloads"].get<int64_t>();
  EXPECT_GT(downloads, 0);
  EXPECT_EQ(placement["summary"]["bytes_downloaded"].get<int64_t>(), downloads * 36 * 4) << placement["summary"];
}

// Constant folding: k = Slice(w) + c depends on initializers only, so a plain run computes Slice and Add once and
// later runs reuse their outputs (the fake counts the runs of the nodes it runs); y = x * k runs every time. An
// observed run runs every node. The outputs are the CPU's in every run.
TEST_F(Fake, APlainRunComputesItsConstantNodesOnceAndAnObservedRunEveryTime) {
  constexpr int64_t n = 4096;
  test::ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {n});
  std::vector<float> w(2 * n), c(n);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) - 6;
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * static_cast<float>(i % 5);
  b.initializer("w", {2 * n}, w);
  b.initializer("c", {n}, c);
  b.int64_initializer("starts", {1}, {2});
  b.int64_initializer("ends", {1}, {n + 2});
  b.node("Slice", {"w", "starts", "ends"}, {"ws"}, "slice");
  b.node("Add", {"ws", "c"}, {"k"}, "add");
  b.node("Mul", {"x", "k"}, {"y"}, "mul");
  b.output("y");
  const Model model = load_model_from_bytes(b.bytes(), ".", "folded.onnx");
  const TensorMap feeds = {{"x", ramp({n}, 0.5f, -1)}};
  const TensorMap cpu = Session(model.graph).run(feeds);
  FakeOps ops({"Slice", "Add", "Mul"});
  const Session device(model.graph, on("fake"));
  for (int run = 1; run <= 3; ++run) {
    expect_same_outputs(cpu, device.run(feeds));
    EXPECT_EQ(fake.counts().runs, 2 + run) << "Slice and Add once, Mul in every run";
  }
  int seen = 0;
  expect_same_outputs(cpu, device.run(feeds, [&](const Node&, size_t, const std::vector<const Tensor*>&) { ++seen; }));
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(fake.counts().runs, 5 + 3) << "an observed run runs every node";
  // Folded outputs are kept within an eighth of the memory budget: with room for ws's 16 KiB, not for k's 16 KiB
  // more, Add runs every time.
  const int64_t budget = memory_budget::limit();
  memory_budget::set_limit(8 * 24 * 1024);
  const Session tight(model.graph, on("fake"));
  for (int run = 1; run <= 3; ++run) expect_same_outputs(cpu, tight.run(feeds));
  memory_budget::set_limit(budget);
  EXPECT_EQ(fake.counts().runs, 8 + 1 + 3 + 3) << "Slice once, Add and Mul in every run";
}

// A feed standing for an initializer (allowed: initializers are feedable) is no constant: that run folds nothing,
// also inside an If branch whose node reads the initializer from the outer graph; the runs before and after it
// reuse what the plain runs folded.
TEST_F(Fake, AFeedStandingForAnInitializerIsReadInsteadOfTheFoldedValues) {
  test::ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.input("go", onnx::TensorProto::BOOL, {});
  b.initializer("w", {2}, {3, 5});
  test::SubgraphBuilder then_branch("then"), else_branch("else");
  then_branch.node("Neg", {"w"}, {"minus_w"}, "neg");
  then_branch.node("Add", {"x", "minus_w"}, {"then_y"}, "then_add");
  then_branch.output("then_y", onnx::TensorProto::FLOAT, {2});
  else_branch.node("Identity", {"x"}, {"else_y"}, "else_id");
  else_branch.output("else_y", onnx::TensorProto::FLOAT, {2});
  onnx::NodeProto& node = b.node("If", {"go"}, {"y"}, "branch");
  test::ModelBuilder::set_graph(node, "then_branch", then_branch.graph());
  test::ModelBuilder::set_graph(node, "else_branch", else_branch.graph());
  b.output("y");
  const Model model = load_model_from_bytes(b.bytes(), ".", "fed.onnx");
  Tensor go(DType::Bool, {});
  go.data<bool>()[0] = true;
  const TensorMap plain = {{"x", ramp({2}, 1, 10)}, {"go", go}};
  TensorMap fed = plain;
  fed["w"] = ramp({2}, 100, 100);
  const Session session(model.graph);
  const auto y = [](const TensorMap& out) {
    return std::vector<float>(out.at("y").data<float>(), out.at("y").data<float>() + 2);
  };
  EXPECT_EQ(y(session.run(plain)), (std::vector<float>{7, 6}));
  EXPECT_EQ(y(session.run(plain)), (std::vector<float>{7, 6}));
  EXPECT_EQ(y(session.run(fed)), (std::vector<float>{-90, -189}));
  EXPECT_EQ(y(session.run(plain)), (std::vector<float>{7, 6}));
}

// The weights reach the device once per audit: the reference run moves them up, and their copies in each target
// format are made there from them (bit-equal conversions), not converted on the host and moved up again. A
// convolution whose weights (64x3x3x3) outweigh its input (3x4x4) many times, audited in fp16 and bf16 with every
// node and probe on the fake: figures the CPU's, and fewer bytes up than two copies of the weights.
TEST_F(Fake, AnAuditMovesItsWeightsUpOnceAndMakesTheirFormatCopiesOnTheDevice) {
  test::ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {1, 3, 4, 4});
  std::vector<float> w(64 * 3 * 3 * 3), bias(64);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(static_cast<int>(i % 97) - 48);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i % 7);
  b.initializer("w", {64, 3, 3, 3}, w);
  b.initializer("b", {64}, bias);
  mpa::test::ModelBuilder::set_ints(b.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu");
  b.output("y");
  const Model model = load_model_from_bytes(b.bytes(), ".", "conv.onnx");
  const int64_t weight_bytes = static_cast<int64_t>((w.size() + bias.size()) * sizeof(float));
  const std::vector<TensorMap> samples = ramp_samples(model);
  const nlohmann::json cpu = figures_of(model, samples, "cpu");
  FakeOps everything(every_registered_op());
  ProbesOnTheFake probes;
  nlohmann::json placement;
  expect_close(figures_of(model, samples, "fake", &placement), cpu, "conv");
  const int64_t uploaded = placement["summary"]["bytes_uploaded"].get<int64_t>();
  EXPECT_GE(uploaded, weight_bytes);
  EXPECT_LT(uploaded, 2 * weight_bytes) << "the weights went up more than once: " << placement["summary"];
}

// With --timing, nodes the device ran carry its own clock's time beside the wall clock's; the CPU has none.
TEST_F(Fake, TimedAuditsReportTheDevicesOwnTimeForTheNodesItRan) {
  const Model model = chain_model();
  AuditOptions options;
  options.device = "fake";
  options.timing = true;
  Auditor auditor(model.graph, options);
  auditor.observe({{"x", ramp({2, 8}, 0.25f, -2)}}, 0);
  report::Report report;
  report.config.targets = {"fp16"};
  report.config.timing = true;
  report.config.samples = 1;
  auditor.fill(report);
  const nlohmann::json nodes = report::to_json(report)["nodes"];
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_GE(nodes[0]["device_time_ms"].get<double>(), 0) << "relu ran on the fake";
  EXPECT_TRUE(nodes[1]["device_time_ms"].is_null()) << "softmax ran on the CPU";
  EXPECT_GE(nodes[2]["device_time_ms"].get<double>(), 0) << "add ran on the fake";
  for (const auto& node : nodes) EXPECT_GT(node["time_ms"].get<double>(), 0) << node["name"];
}

TEST_F(Fake, TheAuditReportNamesEachFallbackWithItsReason) {
  nlohmann::json placement;
  const std::vector<TensorMap> samples = {{{"x", ramp({2, 8}, 0.25f, -2)}}};
  figures_of(chain_model(), samples, "fake", &placement);
  EXPECT_EQ(placement["summary"]["fallback_nodes"], 1);
  const nlohmann::json expected = {{"reference", "fake: Softmax not in allow-list"},
                                   {"fp16", "fake: Softmax not in allow-list"},
                                   {"bf16", "fake: Softmax not in allow-list"}};
  EXPECT_EQ(placement["fallbacks"]["softmax"], expected);
}

// `mpaudit selftest` against the fake device, whose kernels are the CPU's behind transfers: every case runs
// through the real executor on both sides (host inputs, shape-only ops, format storage) and must agree
// bit for bit or within its tolerance; ops the fake does not run are "not supported", never failures.
TEST(FakeSelftest, HarnessPassesWhereTheDeviceIsTheCpu) {
  const FakeOps ops({"Exp",
                     "Relu",
                     "Add",
                     "Div",
                     "Pow",
                     "MatMul",
                     "Gemm",
                     "Conv",
                     "MaxPool",
                     "AveragePool",
                     "BatchNormalization",
                     "LayerNormalization",
                     "Softmax",
                     "ReduceMean",
                     "Transpose",
                     "Slice",
                     "Concat",
                     "Gather",
                     "Where",
                     "Clip",
                     "Expand",
                     "Reshape",
                     "Unsqueeze",
                     "Cast",
                     "Shape",
                     "Size",
                     "ConstantOfShape",
                     "Constant",
                     "Pad",
                     "Resize",
                     "LSTM",
                     "GRU",
                     "RNN",
                     "ConvTranspose"});
  std::ostringstream out;
  const selftest::Summary summary = selftest::run(FakeBackend::instance(), "", out);
  EXPECT_EQ(summary.failed, 0) << out.str();
  EXPECT_GT(summary.passed, 150) << out.str();
  EXPECT_GT(summary.not_supported, 0) << out.str();  // Sin, Tanh, ...: not in the allow-list
  EXPECT_NE(out.str().find("Sin"), std::string::npos);
  // The recurrent ops' and ConvTranspose's cases, optional inputs left out among them, run on the device side
  // and pass.
  std::istringstream lines(out.str());
  std::map<std::string, int> passed_cases;
  for (std::string line; std::getline(lines, line);)
    for (const char* op : {"LSTM", "GRU", "RNN", "ConvTranspose"})
      if (line.rfind(std::string(op) + " ", 0) == 0) {
        EXPECT_NE(line.find(" ok "), std::string::npos) << line;
        ++passed_cases[op];
      }
  // Three LSTM cases, two of each other, each in fp32, fp16, bf16 and with fp16 accumulation at least.
  EXPECT_GE(passed_cases["LSTM"], 3 * 4) << out.str();
  EXPECT_GE(passed_cases["GRU"], 2 * 4) << out.str();
  EXPECT_GE(passed_cases["RNN"], 2 * 4) << out.str();
  EXPECT_GE(passed_cases["ConvTranspose"], 2 * 4) << out.str();
  EXPECT_NE(out.str().find("computes no probes"), std::string::npos);
  // The probes' cases where the device computes them: 6 sizes x 3 formats, figures equal to the host's.
  ProbesOnTheFake probes_there;
  std::ostringstream probed;
  const selftest::Summary with_probes = selftest::run(FakeBackend::instance(), "probes", probed);
  EXPECT_EQ(with_probes.failed, 0) << probed.str();
  EXPECT_EQ(with_probes.passed, 18) << probed.str();
  EXPECT_EQ(FakeBackend::instance().counts().overruns, 0);
}
