#include "selftest/selftest.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <regex>
#include <set>

#include "ops/op.h"
#include "runtime/precision.h"
#include "runtime/session.h"
#include "tensor/formats.h"

namespace mpa::selftest {

namespace {

// [SECTION] Cases

// Specials: normal values with NaN, +-Inf and +-0 first, for the elementwise ops. Values: int64 elements;
// FloatValues: float elements given in millionths.
enum class Fill { Normal, Specials, Positive, Bool, Indices, Values, FloatValues };

struct Input {
  Input(Shape shape, Fill fill = Fill::Normal, bool constant = false, std::vector<int64_t> values = {})
      : shape(std::move(shape)), fill(fill), constant(constant), values(std::move(values)) {}
  Shape shape;
  Fill fill;
  bool constant;                // an initializer (weights, shapes, bounds), not a fed graph input
  std::vector<int64_t> values;  // Fill::Values: int64 elements; Fill::Indices: [-n, n) with n = values[0]
};

// One node at opset 21, the opset of the newest op versions the CUDA table registers.
struct Case {
  Case(std::string op, std::vector<Input> inputs, std::map<std::string, Attribute> attributes = {},
       bool gemm_like = false)
      : op(std::move(op)), inputs(std::move(inputs)), attributes(std::move(attributes)), gemm_like(gemm_like) {}
  std::string op;
  std::vector<Input> inputs;
  std::map<std::string, Attribute> attributes;
  bool gemm_like;  // also run with fp16 accumulation
};
constexpr int64_t kOpset = 21;

Input x(Shape shape) { return Input(std::move(shape)); }
Input specials(Shape shape) { return Input(std::move(shape), Fill::Specials); }
Input positive(Shape shape) { return Input(std::move(shape), Fill::Positive); }
Input weight(Shape shape) { return Input(std::move(shape), Fill::Normal, true); }
Input int64s(std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Input({n}, Fill::Values, true, std::move(values));
}
Input float_values(const std::vector<float>& values) {
  std::vector<int64_t> millionths;
  for (float v : values) millionths.push_back(std::lround(static_cast<double>(v) * 1e6));
  return Input({static_cast<int64_t>(values.size())}, Fill::FloatValues, true, std::move(millionths));
}
Input scalar_bound(float value) {
  return Input({}, Fill::Values, true, {std::lround(value * 1000)});  // thousandths, fed as a float scalar
}

std::vector<Case> cases() {
  std::vector<Case> all;
  const auto unary = [&](const std::string& op, bool positive_only = false) {
    all.push_back({op, {positive_only ? positive({3, 17}) : specials({3, 17})}});
    all.push_back({op, {x({0, 5})}});
  };
  for (const char* op : {"Exp",      "Erf",         "Sin",       "Cos",       "Tanh", "Sigmoid",    "Softplus",
                         "Softsign", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu",  "Selu",       "Mish",
                         "Relu",     "Neg",         "Abs",       "Floor",     "Ceil", "Reciprocal", "Sign"})
    unary(op);
  unary("Sqrt", true);
  unary("Log", true);
  all.push_back({"Gelu", {x({4, 33})}, {{"approximate", Attribute::of_string("tanh")}}});
  all.push_back({"Gelu", {x({4, 33})}});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    all.push_back({op, {specials({2, 3, 17}), specials({17})}});
    all.push_back({op, {x({4, 1, 5}), x({1, 3, 1})}});
    all.push_back({op, {x({0, 3}), x({3})}});
  }
  all.push_back({"Pow", {positive({5, 7}), x({7})}});
  all.push_back({"Pow", {positive({5, 7}), weight({})}});
  all.push_back({"Less", {x({3, 9}), x({9})}});
  all.push_back({"Equal", {Input({3, 9}, Fill::Indices, false, {3}), Input({9}, Fill::Indices, false, {3})}});
  all.push_back({"LessOrEqual", {x({3, 9}), x({3, 9})}});
  all.push_back({"GreaterOrEqual", {x({2, 9}), x({1})}});
  all.push_back({"Greater", {x({3, 9}), x({3, 1})}});
  all.push_back({"Where", {{{3, 1, 6}, Fill::Bool}, x({1, 4, 6}), x({6})}});
  all.push_back({"Clip", {x({6, 11}), scalar_bound(-0.5f), scalar_bound(0.75f)}});
  all.push_back({"MatMul", {x({33, 17}), weight({17, 9})}, {}, true});
  all.push_back({"MatMul", {x({2, 3, 7, 5}), weight({5, 4})}, {}, true});
  all.push_back({"MatMul", {x({2, 1, 4, 6}), x({3, 6, 5})}, {}, true});
  all.push_back({"MatMul", {x({6}), x({2, 6, 3})}, {}, true});
  all.push_back({"Gemm", {x({7, 12}), weight({10, 12}), weight({10})}, {{"transB", Attribute::of_int(1)}}, true});
  all.push_back(
      {"Gemm",
       {x({12, 7}), weight({12, 10}), weight({7, 1})},
       {{"transA", Attribute::of_int(1)}, {"alpha", Attribute::of_float(0.5f)}, {"beta", Attribute::of_float(2.f)}},
       true});
  all.push_back({"Conv",
                 {x({2, 3, 11, 13}), weight({8, 3, 3, 3}), weight({8})},
                 {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 2})}},
                 true});
  all.push_back({"Conv", {x({1, 6, 9, 9}), weight({6, 1, 3, 3})}, {{"group", Attribute::of_int(6)}}, true});
  all.push_back({"Conv", {x({2, 4, 17}), weight({5, 4, 3})}, {{"dilations", Attribute::of_ints({2})}}, true});
  all.push_back({"Conv", {x({1, 16, 8, 8}), weight({32, 16, 1, 1}), weight({32})}, {}, true});
  all.push_back({"MaxPool",
                 {x({2, 3, 11, 11})},
                 {{"kernel_shape", Attribute::of_ints({3, 3})},
                  {"strides", Attribute::of_ints({2, 2})},
                  {"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  all.push_back({"AveragePool",
                 {x({2, 3, 10, 9})},
                 {{"kernel_shape", Attribute::of_ints({3, 2})},
                  {"pads", Attribute::of_ints({1, 0, 1, 1})},
                  {"count_include_pad", Attribute::of_int(1)},
                  {"ceil_mode", Attribute::of_int(1)},
                  {"strides", Attribute::of_ints({2, 2})}}});
  all.push_back({"AveragePool",
                 {x({1, 2, 7})},
                 {{"kernel_shape", Attribute::of_ints({3})}, {"pads", Attribute::of_ints({1, 1})}}});
  all.push_back({"GlobalAveragePool", {x({2, 5, 7, 3})}});
  all.push_back({"GlobalMaxPool", {x({2, 5, 7, 3})}});
  all.push_back(
      {"BatchNormalization", {x({2, 5, 7, 3}), weight({5}), weight({5}), weight({5}), {{5}, Fill::Positive, true}}});
  all.push_back({"LayerNormalization", {x({4, 7, 33}), weight({33}), weight({33})}});
  all.push_back({"LayerNormalization", {x({3, 4, 5}), weight({4, 5}), weight({5})}, {{"axis", Attribute::of_int(1)}}});
  all.push_back({"Softmax", {x({5, 37})}});
  all.push_back({"Softmax", {x({3, 4, 5})}, {{"axis", Attribute::of_int(1)}}});
  all.push_back({"LogSoftmax", {x({6, 19})}});
  all.push_back({"ReduceMean", {x({4, 6, 5}), int64s({1})}});
  all.push_back({"ReduceMean", {x({4, 6, 5}), int64s({0, 2})}, {{"keepdims", Attribute::of_int(0)}}});
  all.push_back({"ReduceSum", {x({3, 50})}});
  all.push_back({"ReduceMax", {x({3, 7, 2}), int64s({-1})}});
  all.push_back({"ReduceL2", {x({3, 7, 2}), int64s({1})}});
  all.push_back({"ReduceSumSquare", {x({9, 4}), int64s({0})}});
  all.push_back({"Transpose", {x({2, 3, 4, 5})}, {{"perm", Attribute::of_ints({0, 2, 3, 1})}}});
  all.push_back({"Transpose", {x({7, 9})}});
  all.push_back({"Slice", {x({5, 7, 9}), int64s({1, -1}), int64s({4, -8}), int64s({0, 2}), int64s({2, -3})}});
  all.push_back({"Concat", {x({2, 3, 4}), x({2, 1, 4}), x({2, 0, 4})}, {{"axis", Attribute::of_int(1)}}});
  all.push_back({"Gather", {weight({10, 8}), {{3, 4}, Fill::Indices, false, {10}}}});
  all.push_back({"Gather", {x({4, 10, 3}), {{5}, Fill::Indices, false, {10}}}, {{"axis", Attribute::of_int(1)}}});
  all.push_back({"Expand", {x({3, 1}), int64s({2, 3, 4})}});
  all.push_back({"Reshape", {x({2, 3, 4}), int64s({6, -1})}});
  all.push_back({"Pad", {x({2, 3, 5}), int64s({0, 1, 2, 0, -1, 3}), weight({})}});
  all.push_back({"Pad", {x({1, 4, 9}), int64s({0, 0, 3, 0, 0, 2})}, {{"mode", Attribute::of_string("reflect")}}});
  all.push_back({"Pad", {x({2, 5}), int64s({1, 2, 3, 1})}, {{"mode", Attribute::of_string("edge")}}});
  all.push_back({"Pad", {x({2, 5}), int64s({2, 7, 0, 1})}, {{"mode", Attribute::of_string("wrap")}}});
  all.push_back({"Resize", {x({1, 2, 5, 6}), Input({0}, Fill::Values, true, {}), float_values({1, 1, 2, 2})}});
  all.push_back({"Resize",
                 {x({1, 2, 5, 6}), Input({0}, Fill::Values, true, {}), float_values({1, 1, 1.6f, 0.5f})},
                 {{"mode", Attribute::of_string("linear")}}});
  all.push_back({"Resize",
                 {x({1, 1, 4, 7}), Input({0}, Fill::Values, true, {}), float_values({1, 1, 2.5f, 1.25f})},
                 {{"mode", Attribute::of_string("cubic")},
                  {"coordinate_transformation_mode", Attribute::of_string("align_corners")}}});
  all.push_back({"Cast", {x({3, 7})}, {{"to", Attribute::of_int(7)}}});   // float -> int64
  all.push_back({"Cast", {x({3, 7})}, {{"to", Attribute::of_int(10)}}});  // float -> float16
  all.push_back({"Cast", {Input({4, 5}, Fill::Indices, false, {1000})}, {{"to", Attribute::of_int(1)}}});
  all.push_back({"Shape", {x({2, 3, 4})}, {{"start", Attribute::of_int(1)}}});
  all.push_back({"Size", {x({2, 3, 4})}});
  all.push_back({"ConstantOfShape",
                 {int64s({2, 3})},
                 {{"value", Attribute::of_tensor(Tensor::from_vector<float>({1.5f}, {1}))}}});
  all.push_back(
      {"Constant", {}, {{"value", Attribute::of_tensor(Tensor::from_vector<float>({0.1f, -2.f, 3e4f}, {3}))}}});
  all.push_back({"Unsqueeze", {x({3, 4}), int64s({0, 3})}});
  return all;
}

// [SECTION] Running a case

Tensor make_input(const Input& in, std::mt19937& rng) {
  if (in.fill == Fill::FloatValues) {
    std::vector<float> values;
    for (int64_t v : in.values) values.push_back(static_cast<float>(static_cast<double>(v) / 1e6));
    return Tensor::from_vector(values, in.shape);
  }
  if (in.fill == Fill::Values) {
    if (in.shape.empty()) return Tensor::scalar(static_cast<float>(in.values[0]) / 1000.f);  // a float bound
    return Tensor::from_vector(in.values, in.shape);
  }
  const int64_t n = shape_numel(in.shape);
  if (in.fill == Fill::Bool) {
    Tensor t(DType::Bool, in.shape);
    for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = (rng() & 1) != 0;
    return t;
  }
  if (in.fill == Fill::Indices) {
    Tensor t(DType::Int64, in.shape);
    std::uniform_int_distribution<int64_t> pick(-in.values[0], in.values[0] - 1);
    for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = pick(rng);
    return t;
  }
  Tensor t(DType::Float32, in.shape);
  std::normal_distribution<float> normal(0.f, 1.5f);
  for (int64_t i = 0; i < n; ++i) {
    const float v = normal(rng);
    t.data<float>()[i] = in.fill == Fill::Positive ? std::fabs(v) + 0.05f : v;
  }
  if (in.fill == Fill::Specials) {
    const float inf = std::numeric_limits<float>::infinity();
    const float special[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.f, -0.f};
    for (int64_t i = 0; i < std::min<int64_t>(n, 5); ++i) t.data<float>()[i] = special[i];
  }
  return t;
}

// "x0", "x1", ... (appended, not `"x" + ...`, which GCC 12 flags with a false -Wrestrict, PR 105651).
std::string input_name(size_t i) {
  std::string name = "x";
  name.append(std::to_string(i));
  return name;
}

std::shared_ptr<Graph> one_node_graph(const Case& c, const std::vector<Tensor>& values) {
  auto graph = std::make_shared<Graph>();
  graph->opsets[""] = kOpset;
  Node node;
  node.name = c.op + "_selftest";
  node.op_type = c.op;
  node.attributes = c.attributes;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::string name = input_name(i);
    node.inputs.push_back(name);
    if (c.inputs[i].constant) {
      graph->initializers[name] = values[i];
    } else {
      ValueInfo info;
      info.name = name;
      info.elem_type = values[i].dtype() == DType::Bool ? 9 : values[i].dtype() == DType::Int64 ? 7 : 1;
      info.has_shape = true;
      info.dims = values[i].shape();
      graph->inputs.push_back(info);
    }
  }
  node.outputs = {"y"};
  graph->nodes.push_back(node);
  ValueInfo out;
  out.name = "y";
  graph->outputs.push_back(out);
  return graph;
}

// A float's position on `format`'s grid as a monotonic integer: neighbours on the grid differ by one.
int64_t grid_ordinal(float v, Format format) {
  int64_t magnitude = 0;
  const float a = std::fabs(v);
  switch (format) {
    case Format::FP16: magnitude = float_to_half(a); break;
    case Format::BF16: magnitude = float_to_bfloat16(a); break;
    case Format::FP8E4M3FN: magnitude = float_to_fp8_e4m3fn(a); break;
    case Format::FP8E5M2: magnitude = float_to_fp8_e5m2(a); break;
    case Format::TF32: magnitude = float_bits(a) >> 13; break;
    default: magnitude = float_bits(a); break;
  }
  return std::signbit(v) ? -magnitude : magnitude;
}

// An error energy of the order of float32's own rounding of every element (2^-48 = 3.6e-15 of the signal's).
constexpr double kNegligibleNmse = 1e-14;

struct Tolerance {
  enum class Kind { Exact, Ulps, Nmse } kind = Kind::Exact;
  double limit = 0;
};

// What the op's precision class allows in `format` (the header says why).
Tolerance tolerance(PrecisionClass precision, Format format, Accumulation accumulation) {
  const bool sixteen_or_less = format_traits(format).storage_bits <= 16;
  switch (precision) {
    case PrecisionClass::Exact:
    case PrecisionClass::Elementwise: return {Tolerance::Kind::Exact, 0};
    case PrecisionClass::Transcendental: return {Tolerance::Kind::Ulps, sixteen_or_less ? 1.0 : 4.0};
    case PrecisionClass::Accumulating: break;
  }
  if (accumulation == Accumulation::FP16) return {Tolerance::Kind::Nmse, 1e-4};
  switch (format) {
    case Format::FP16: return {Tolerance::Kind::Nmse, 1e-6};
    case Format::BF16:
    case Format::TF32: return {Tolerance::Kind::Nmse, 1e-5};
    case Format::FP8E4M3FN:
    case Format::FP8E5M2: return {Tolerance::Kind::Nmse, 1e-3};
    default: return {Tolerance::Kind::Nmse, 1e-7};
  }
}

char* format_number(char* buffer, size_t size, double v) {
  std::snprintf(buffer, size, "%.2g", v);
  return buffer;
}

// Compares the device's output with the CPU's; "" when within `tol`, else why not, in `metric` either way.
bool compare(const Tensor& cpu, const Tensor& device, Format format, const Tolerance& tol, std::string& metric) {
  char a[32], b[32];
  if (cpu.dtype() != device.dtype() || cpu.shape() != device.shape()) {
    metric = "output " + dtype_name(device.dtype()) + " " + shape_str(device.shape()) + ", the CPU's " +
             dtype_name(cpu.dtype()) + " " + shape_str(cpu.shape());
    return false;
  }
  if (cpu.dtype() != DType::Float32) {
    const bool same = cpu.nbytes() == 0 || std::memcmp(cpu.raw(), device.raw(), cpu.nbytes()) == 0;
    metric = same ? "bit-equal" : "elements differ";
    return same;
  }
  const float* c = cpu.data<float>();
  const float* d = device.data<float>();
  double err = 0, ref = 0, absmax = 0;
  int64_t max_ulps = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i)
    if (std::isfinite(c[i])) absmax = std::max(absmax, std::fabs(static_cast<double>(c[i])));
  // Values far below the output's scale (a cancellation near zero, as Gelu's for large negative x) are
  // compared in ulps of 1/4096 of its largest magnitude, where a relative ulp count says nothing.
  const double floor = absmax / 4096;
  const double floor_ulp = floor > 0 ? std::ldexp(1.0, std::ilogb(floor) - format_traits(format).mantissa_bits) : 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    if (!std::isfinite(c[i]) || !std::isfinite(d[i])) {
      const bool same = (std::isnan(c[i]) && std::isnan(d[i])) || c[i] == d[i];
      if (!same) {
        metric = "element " + std::to_string(i) + " is " + std::to_string(d[i]) + ", the CPU's " + std::to_string(c[i]);
        return false;
      }
      continue;
    }
    err += (static_cast<double>(d[i]) - c[i]) * (static_cast<double>(d[i]) - c[i]);
    ref += static_cast<double>(c[i]) * c[i];
    const bool tiny = std::max(std::fabs(c[i]), std::fabs(d[i])) < floor;
    const int64_t ulps = tiny ? static_cast<int64_t>(std::ceil(std::fabs(static_cast<double>(d[i]) - c[i]) / floor_ulp))
                              : std::abs(grid_ordinal(d[i], format) - grid_ordinal(c[i], format));
    max_ulps = std::max(max_ulps, ulps);
  }
  const double nmse = ref > 0 ? err / ref : err;
  switch (tol.kind) {
    case Tolerance::Kind::Exact:
      metric = max_ulps == 0 ? "bit-equal" : "max " + std::to_string(max_ulps) + " ulp (limit: bit-equal)";
      return max_ulps == 0;
    case Tolerance::Kind::Ulps:
      // An error that is many ulps only where the function cancels (Gelu's 1 + erf(x / sqrt 2) for negative x
      // magnifies a 1-ulp libm difference 300-fold) still passes when it is negligible overall.
      metric = "max " + std::to_string(max_ulps) + " ulp (limit " + std::to_string(static_cast<int>(tol.limit)) +
               ", or nmse below " + format_number(b, sizeof b, kNegligibleNmse) + "), nmse " +
               format_number(a, sizeof a, nmse);
      return max_ulps <= tol.limit || nmse < kNegligibleNmse;
    case Tolerance::Kind::Nmse:
      metric = std::string("nmse ") + format_number(a, sizeof a, nmse) + " (limit " +
               format_number(b, sizeof b, tol.limit) + "), max " + std::to_string(max_ulps) + " ulp";
      return nmse <= tol.limit;
  }
  return false;
}

struct Setting {
  Format format;
  Accumulation accumulation;
  std::string name;
};

}  // namespace

Summary run(const Backend& device, const std::string& op_filter, std::ostream& out) {
  const std::regex filter(op_filter.empty() ? ".*" : op_filter);
  const std::vector<Setting> settings = {
      {Format::FP32, Accumulation::FP32, "fp32"},         {Format::FP16, Accumulation::FP32, "fp16"},
      {Format::BF16, Accumulation::FP32, "bf16"},         {Format::TF32, Accumulation::FP32, "tf32"},
      {Format::FP8E4M3FN, Accumulation::FP32, "fp8e4m3"}, {Format::FP16, Accumulation::FP16, "fp16+acc16"}};
  Summary summary;
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-22s %-11s %-6s %s\n", "op", "inputs", "format", "result", "measure");
  out << line;
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    if (!std::regex_match(c.op, filter)) continue;
    std::mt19937 rng(seed++);
    std::vector<Tensor> values;
    for (const Input& in : c.inputs) values.push_back(make_input(in, rng));
    std::string shapes;
    for (const Input& in : c.inputs)
      if (!in.constant || (in.fill != Fill::Values && in.fill != Fill::FloatValues))
        shapes += (shapes.empty() ? "" : ",") + shape_str(in.shape);
    const std::shared_ptr<const Graph> graph = one_node_graph(c, values);
    TensorMap feeds;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (!c.inputs[i].constant) feeds[input_name(i)] = values[i];
    for (const Setting& setting : settings) {
      if (setting.accumulation == Accumulation::FP16 && !c.gemm_like) continue;
      Outcome outcome{c.op, shapes, setting.name, Outcome::Result::Ok, ""};
      try {
        SessionOptions options;
        options.precision = setting.format;
        options.accumulation = setting.accumulation;
        const Session on_cpu(graph, options);
        options.device = std::string(device.name());
        const Session on_device(graph, options);
        const Placement placed = on_device.placement(0, on_device.default_config());
        if (placed.backend != &device) {
          outcome.result = Outcome::Result::NotSupported;
          outcome.metric = placed.fallback_reason;
        } else {
          const Tensor expected = on_cpu.run(feeds).at("y");
          const Tensor got = on_device.run(feeds).at("y");
          const Tolerance tol = tolerance(traits_of(graph->nodes[0]).precision, setting.format, setting.accumulation);
          outcome.result =
              compare(expected, got, setting.format, tol, outcome.metric) ? Outcome::Result::Ok : Outcome::Result::Fail;
        }
      } catch (const Error& e) {
        outcome.result = Outcome::Result::Fail;
        outcome.metric = e.what();
      }
      const char* result = outcome.result == Outcome::Result::Ok     ? "ok"
                           : outcome.result == Outcome::Result::Fail ? "FAIL"
                                                                     : "n/s";
      summary.passed += outcome.result == Outcome::Result::Ok;
      summary.failed += outcome.result == Outcome::Result::Fail;
      summary.not_supported += outcome.result == Outcome::Result::NotSupported;
      std::snprintf(line, sizeof line, "%-20s %-22s %-11s %-6s %s\n", outcome.op.c_str(), outcome.shape.c_str(),
                    outcome.format.c_str(), result, outcome.metric.c_str());
      out << line;
    }
  }
  return summary;
}

std::vector<std::string> uncovered_ops(const Backend& device) {
  std::set<std::string> covered;
  for (const Case& c : cases()) covered.insert(c.op);
  std::set<std::string> missing;
  for (const OpRegistry::Entry& e : OpRegistry::instance().entries())
    if (e.backend == device.kernel_table() && !covered.count(e.op_type)) missing.insert(e.op_type);
  return {missing.begin(), missing.end()};
}

}  // namespace mpa::selftest
