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
#include "probes/device_probes.h"
#include "runtime/precision.h"
#include "runtime/session.h"
#include "tensor/formats.h"

namespace mpa::selftest {

namespace {

// [SECTION] Cases

// Specials: normal values with NaN, +-Inf and +-0 first, for the elementwise ops. Values: int64 elements;
// FloatValues: float elements given in millionths. Absent: an optional input left out (an empty name).
enum class Fill { Normal, Specials, Positive, Bool, Indices, Values, FloatValues, Absent };

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
Input absent() { return Input({0}, Fill::Absent, true); }
Attribute strings(std::vector<std::string> values) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(values);
  return a;
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
  // Asymmetric padding, made explicit on the device: uneven pads, and auto_pad SAME_UPPER with stride 2.
  all.push_back({"Conv",
                 {x({1, 3, 7, 8}), weight({4, 3, 3, 3}), weight({4})},
                 {{"pads", Attribute::of_ints({0, 1, 2, 0})}},
                 true});
  all.push_back({"Conv",
                 {x({2, 3, 9}), weight({4, 3, 4})},
                 {{"auto_pad", Attribute::of_string("SAME_UPPER")}, {"strides", Attribute::of_ints({2})}},
                 true});
  all.push_back({"ConvTranspose",
                 {x({1, 4, 5, 6}), weight({4, 3, 3, 3}), weight({3})},
                 {{"strides", Attribute::of_ints({2, 2})},
                  {"pads", Attribute::of_ints({1, 1, 1, 1})},
                  {"output_padding", Attribute::of_ints({1, 0})}},
                 true});
  all.push_back({"ConvTranspose",
                 {x({2, 6, 7}), weight({6, 2, 4})},
                 {{"group", Attribute::of_int(3)}, {"dilations", Attribute::of_ints({2})}},
                 true});
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
  // LSTM: X, W, R, B; then both directions in layout 1 with initial states, peepholes and clip; then reverse,
  // no bias, coupled input and forget gates, other activation functions.
  all.push_back({"LSTM", {x({5, 3, 7}), weight({1, 24, 7}), weight({1, 24, 6}), weight({1, 48})},
                 {{"hidden_size", Attribute::of_int(6)}}, true});
  all.push_back({"LSTM",
                 {x({2, 4, 5}), weight({2, 24, 5}), weight({2, 24, 6}), weight({2, 48}), absent(), x({2, 2, 6}),
                  x({2, 2, 6}), weight({2, 18})},
                 {{"hidden_size", Attribute::of_int(6)},
                  {"direction", Attribute::of_string("bidirectional")},
                  {"layout", Attribute::of_int(1)},
                  {"clip", Attribute::of_float(2.5f)}},
                 true});
  all.push_back({"LSTM",
                 {x({3, 2, 4}), weight({1, 20, 4}), weight({1, 20, 5})},
                 {{"hidden_size", Attribute::of_int(5)},
                  {"direction", Attribute::of_string("reverse")},
                  {"input_forget", Attribute::of_int(1)},
                  {"activations", strings({"HardSigmoid", "Affine", "Softsign"})},
                  {"activation_alpha", Attribute::of_floats({0.3f, 0.7f})},
                  {"activation_beta", Attribute::of_floats({0.4f, -0.1f})}},
                 true});
  // GRU: the reset gate applied before the recurrent GEMM (its operand r ⊙ H) and after it, both directions
  // with an initial state; RNN: forward, then reverse in layout 1 with Relu and clip.
  all.push_back({"GRU", {x({6, 2, 5}), weight({1, 21, 5}), weight({1, 21, 7}), weight({1, 42})},
                 {{"hidden_size", Attribute::of_int(7)}}, true});
  all.push_back({"GRU",
                 {x({4, 3, 5}), weight({2, 12, 5}), weight({2, 12, 4}), weight({2, 24}), absent(), x({2, 3, 4})},
                 {{"hidden_size", Attribute::of_int(4)},
                  {"direction", Attribute::of_string("bidirectional")},
                  {"linear_before_reset", Attribute::of_int(1)}},
                 true});
  all.push_back({"RNN", {x({5, 2, 6}), weight({1, 8, 6}), weight({1, 8, 8}), weight({1, 16})},
                 {{"hidden_size", Attribute::of_int(8)}}, true});
  all.push_back({"RNN",
                 {x({3, 4, 6}), weight({1, 5, 6}), weight({1, 5, 5})},
                 {{"hidden_size", Attribute::of_int(5)},
                  {"direction", Attribute::of_string("reverse")},
                  {"layout", Attribute::of_int(1)},
                  {"activations", strings({"Relu"})},
                  {"clip", Attribute::of_float(3.f)}},
                 true});
  return all;
}

// [SECTION] Running a case

Tensor make_input(const Input& in, std::mt19937& rng) {
  if (in.fill == Fill::Absent) return Tensor(DType::Float32, in.shape);
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
    if (c.inputs[i].fill == Fill::Absent) {
      node.inputs.emplace_back();
      continue;
    }
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

// [SECTION] Probes where the values are

// Values for the probes' cases: normal values of three magnitudes with zeros, NaN, +-Inf, values beyond
// fp16's range and below its smallest subnormal, and float subnormals, scattered by position.
Tensor probe_values(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  Tensor t(DType::Float32, {n});
  float* v = t.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const float scales[] = {1e-3f, 1.f, 300.f};
    v[i] = normal(rng) * scales[i % 3];
    if (i % 101 == 7) v[i] = std::numeric_limits<float>::quiet_NaN();
    if (i % 211 == 11) v[i] = (i % 2 ? 1 : -1) * std::numeric_limits<float>::infinity();
    if (i % 53 == 5) v[i] = 0;
    if (i % 67 == 3) v[i] = 1e5f * normal(rng);
    if (i % 71 == 2) v[i] = 1e-8f * normal(rng);
    if (i % 97 == 1) v[i] = 1e-40f;
  }
  return t;
}

// Whether the device's figures are the host's: counts, extremes and histograms equal, sums within 1e-12
// of their scale (the summation order differs); `worst` takes the largest relative sum difference.
struct ProbeComparison {
  bool equal = true;
  double worst = 0;
  std::string first_difference;
  void count(const char* what, double host, double device) {
    if (host == device || (std::isnan(host) && std::isnan(device))) return;
    if (equal) first_difference = std::string(what) + " " + std::to_string(host) + " vs " + std::to_string(device);
    equal = false;
  }
  void sum(const char* what, const ExactSum& host, const ExactSum& device, double scale) {
    const double diff = std::fabs(host.value() - device.value()), rel = scale > 0 ? diff / scale : diff;
    worst = std::max(worst, rel);
    if (rel > 1e-12 && equal) first_difference = std::string(what) + " off by " + std::to_string(rel);
    equal = equal && rel <= 1e-12;
  }
  void divergence(const probes::Divergence& h, const probes::Divergence& d) {
    count("compared", double(h.compared), double(d.compared));
    count("ref_finite", double(h.ref_finite), double(d.ref_finite));
    count("nan", double(h.nan), double(d.nan));
    count("inf", double(h.inf), double(d.inf));
    count("mismatches", double(h.mismatches), double(d.mismatches));
    count("max_abs", h.max_abs, d.max_abs);
    count("max_rel", h.max_rel, d.max_rel);
    count("max_ulp", h.max_ulp, d.max_ulp);
    sum("sum_abs", h.sum_abs, d.sum_abs, h.sum_abs.value());
    sum("sum_sq_err", h.sum_sq_err, d.sum_sq_err, h.sum_sq_err.value());
    sum("sum_ref_sq", h.sum_ref_sq, d.sum_ref_sq, h.sum_ref_sq.value());
    sum("sum_tgt_sq", h.sum_tgt_sq, d.sum_tgt_sq, h.sum_tgt_sq.value());
    sum("sum_ref_tgt", h.sum_ref_tgt, d.sum_ref_tgt, std::sqrt(h.sum_ref_sq.value() * h.sum_tgt_sq.value()));
    sum("sum_ulp", h.sum_ulp, d.sum_ulp, h.sum_ulp.value());
  }
  void histogram(const probes::ExpHistogram& h, const probes::ExpHistogram& d) {
    for (int b = 0; b < probes::ExpHistogram::kBins; ++b)
      count("histogram bin", double(h.counts[size_t(b)]), double(d.counts[size_t(b)]));
  }
};

// One probes case: a tensor of n values against a perturbed copy of it and itself stored in `format`, on
// the device and on the host.
Outcome probe_case(const Backend& device, int64_t n, Format format, std::mt19937& rng) {
  Outcome outcome{"probes", "[" + std::to_string(n) + "]", std::string(format_name(format)), Outcome::Result::Ok, ""};
  if (!device.computes_probes()) {
    outcome.result = Outcome::Result::NotSupported;
    outcome.metric = std::string(device.name()) + " computes no probes: the host does, on copies";
    return outcome;
  }
  const Tensor ref = probe_values(n, rng);
  Tensor run = ref.clone();
  std::uniform_real_distribution<float> wobble(-1e-3f, 1e-3f);
  for (int64_t i = 0; i < n; ++i) run.data<float>()[i] *= 1 + wobble(rng);
  const probes::Divergence::Params params(format, {});
  // The host: the reference's figures over the whole tensor, the divergences as the audit measures them.
  probes::RangeProbe range;
  probes::ExpHistogram hist;
  probes::RangeProbe::Chunk range_chunk;
  probes::ExpHistogram::Chunk hist_chunk;
  probes::for_each_value(ref, 0, n, [&](double x, int64_t) {
    range_chunk.add(x);
    hist_chunk.add(x);
  });
  range.absorb(range_chunk);
  hist.absorb(hist_chunk);
  const probes::FormatFit fit = probes::FormatFit::of(ref, format);
  probes::ExpHistogram run_hist;
  const std::vector<probes::Divergence> host =
      probes::Divergence::of_stored_and_each(ref, {format, 1}, {&run}, params, 0, {&run_hist});
  // The device: the same from one request, the stored reference made there.
  const Tensor ref_there = device.upload(ref), run_there = device.upload(run);
  const Tensor stored_there = device.convert(ref_there, format, 1);
  kernels::FitBounds bounds = probes::FormatFit::Bounds(format);
  bounds.significant = probes::FormatFit::significant_flush_threshold(format, range.absmax());
  probes::ExpHistogram device_run_hist;
  const std::optional<probes::DeviceFigures> there = probes::probe_on_device(
      device, ref_there, true, {bounds}, {&stored_there, &run_there}, params, 0, {nullptr, &device_run_hist});
  if (!there) {
    outcome.result = Outcome::Result::Fail;
    outcome.metric = "the device refused the request";
    return outcome;
  }
  ProbeComparison cmp;
  const probes::RangeProbe device_range = probes::fold_range(there->chunks);
  for (const auto& [what, h, d] : {std::tuple{"count", range.count, device_range.count},
                                   {"finite", range.finite, device_range.finite},
                                   {"zeros", range.zeros, device_range.zeros},
                                   {"nan", range.nan, device_range.nan},
                                   {"+inf", range.pos_inf, device_range.pos_inf},
                                   {"-inf", range.neg_inf, device_range.neg_inf}})
    cmp.count(what, double(h), double(d));
  cmp.count("min", range.min, device_range.min);
  cmp.count("max", range.max, device_range.max);
  cmp.sum("sum", range.sum, device_range.sum, std::sqrt(double(range.finite) * range.sum_sq.value()));
  cmp.sum("sum_sq", range.sum_sq, device_range.sum_sq, range.sum_sq.value());
  cmp.histogram(hist, probes::fold_histogram(there->chunks));
  const probes::FormatFit device_fit = probes::fold_fit(there->chunks, 0, 1);
  cmp.count("overflow", double(fit.overflow), double(device_fit.overflow));
  cmp.count("flush_to_zero", double(fit.flush_to_zero), double(device_fit.flush_to_zero));
  cmp.count("significant_flush", double(fit.significant_flush), double(device_fit.significant_flush));
  cmp.count("subnormal", double(fit.subnormal), double(device_fit.subnormal));
  cmp.count("nonzero", double(fit.nonzero), double(device_fit.nonzero));
  for (size_t j = 0; j < host.size(); ++j) cmp.divergence(host[j], there->runs[j]);
  cmp.histogram(run_hist, device_run_hist);
  char worst[32];
  std::snprintf(worst, sizeof worst, "%.1e", cmp.worst);
  outcome.result = cmp.equal ? Outcome::Result::Ok : Outcome::Result::Fail;
  outcome.metric = cmp.equal
                       ? "counts, extremes, histograms equal; sums within " + std::string(worst) + " (limit 1e-12)"
                       : cmp.first_difference;
  return outcome;
}

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
  const auto record = [&](const Outcome& outcome) {
    const char* result = outcome.result == Outcome::Result::Ok     ? "ok"
                         : outcome.result == Outcome::Result::Fail ? "FAIL"
                                                                   : "n/s";
    summary.passed += outcome.result == Outcome::Result::Ok;
    summary.failed += outcome.result == Outcome::Result::Fail;
    summary.not_supported += outcome.result == Outcome::Result::NotSupported;
    std::snprintf(line, sizeof line, "%-20s %-22s %-11s %-6s %s\n", outcome.op.c_str(), outcome.shape.c_str(),
                  outcome.format.c_str(), result, outcome.metric.c_str());
    out << line;
  };
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    if (!std::regex_match(c.op, filter)) continue;
    std::mt19937 rng(seed++);
    std::vector<Tensor> values;
    for (const Input& in : c.inputs) values.push_back(make_input(in, rng));
    std::string shapes;
    for (const Input& in : c.inputs)
      if (!in.constant || (in.fill != Fill::Values && in.fill != Fill::FloatValues && in.fill != Fill::Absent))
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
      record(outcome);
    }
  }
  // The probes' cases, sizes around a chunk (16384) and a device block (256) included.
  if (std::regex_match("probes", filter))
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{16384}, int64_t{16385}, int64_t{100003}})
      for (const Format format : {Format::FP16, Format::BF16, Format::FP8E4M3FN}) {
        std::mt19937 rng(seed++);
        try {
          record(probe_case(device, n, format, rng));
        } catch (const Error& e) {
          record({"probes", "[" + std::to_string(n) + "]", std::string(format_name(format)), Outcome::Result::Fail,
                  e.what()});
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
