// The CUDA backend's recurrent cells and ConvTranspose's column step, run on the host: the same per-element code
// (backends/cuda/ops/recurrent_cells.h, transposed_columns.h: host and device functions) and the same GEMM
// descriptions, here through the CPU's GEMM, held against the CPU's ops in fp32 and fp16. What a GPU adds (cuBLAS's
// summation order, its libm) is left to `selftest --device cuda`; the index math, the order of operations and
// the GEMMs' operands, offsets and strides are proved here, without one.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/gemm.h"
#include "backends/cuda/ops/recurrent_cells.h"
#include "backends/cuda/ops/transposed_columns.h"
#include "model/loader.h"
#include "runtime/session.h"
#include "support/audit_helpers.h"
#include "support/model_builder.h"

using namespace mpa;
using mpa::test::ModelBuilder;
using mpa::test::values;

namespace {

// Values as the executor gives them to a node computing in `format`: on its grid.
std::vector<float> in_format(std::vector<float> v, Format format) {
  round_to_format(format, v.data(), static_cast<int64_t>(v.size()));
  return v;
}

// A GemmCall run as cuBLAS runs it, through the CPU's GEMM seam (fp32 accumulation, as the CPU's recurrent ops
// and ConvTranspose use it in fp32 and fp16).
void run_on_host(const cuda::GemmCall& call, const float* a, const float* b, float* c) {
  for (size_t i = 0; i < call.c_offsets.size(); ++i)
    cpu::gemm(call.trans_a, call.trans_b, call.M, call.N, call.K, static_cast<float>(call.alpha), a + call.a_offsets[i],
              call.lda, b + call.b_offsets[i], call.ldb, static_cast<float>(call.beta), c + call.c_offsets[i], call.ldc,
              cpu::GemmMath{});
}

// Within 1e-5 of the largest magnitude: the host's vector libm and these scalar cells differ in last bits only;
// a wrong offset or order of operations is off by the values themselves.
void expect_close(const std::vector<float>& host, const Tensor& cpu, const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(host.size()), cpu.numel()) << what;
  float scale = 0, worst = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) scale = std::max(scale, std::fabs(cpu.data<float>()[i]));
  for (int64_t i = 0; i < cpu.numel(); ++i)
    worst = std::max(worst, std::fabs(host[static_cast<size_t>(i)] - cpu.data<float>()[i]));
  EXPECT_GT(scale, 0.f) << what;
  EXPECT_LE(worst, 1e-5f * scale) << what << ": largest difference " << worst << " of " << scale;
}

struct RecurrentCase {
  std::string op;
  int64_t gates, seq = 5, batch = 3, input = 4, hidden = 6;
  bool bidirectional = true, batch_first = false, linear_before_reset = false, input_forget = false;
  bool initial = true, peepholes = false, bias = true;
  float clip = 0;
};

// The node's inputs and attributes, and the outputs the CPU's op computes in `format`.
struct RecurrentRun {
  RecurrentAttrs attrs;
  RecurrentDims dims;
  std::vector<float> x, w, r, b, initial_h, initial_c, p;
  TensorMap cpu;
};

RecurrentRun run_on_cpu(const RecurrentCase& c, Format format) {
  RecurrentRun run;
  const int64_t D = c.bidirectional ? 2 : 1, width = c.gates * c.hidden;
  const Shape x_shape = c.batch_first ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
  const Shape state_shape = c.batch_first ? Shape{c.batch, D, c.hidden} : Shape{D, c.batch, c.hidden};
  run.x = values(static_cast<size_t>(c.seq * c.batch * c.input), 1.f, 1);
  run.w = values(static_cast<size_t>(D * width * c.input), 0.5f, 2);
  run.r = values(static_cast<size_t>(D * width * c.hidden), 0.4f, 3);
  run.b = values(static_cast<size_t>(D * 2 * width), 0.3f, 4);
  run.initial_h = values(static_cast<size_t>(D * c.batch * c.hidden), 0.5f, 5);
  run.initial_c = values(static_cast<size_t>(D * c.batch * c.hidden), 0.5f, 6);
  run.p = values(static_cast<size_t>(D * 3 * c.hidden), 0.3f, 7);
  ModelBuilder m(14);
  m.input("x", onnx::TensorProto::FLOAT, x_shape);
  m.initializer("w", {D, width, c.input}, run.w);
  m.initializer("r", {D, width, c.hidden}, run.r);
  if (c.bias) m.initializer("b", {D, 2 * width}, run.b);
  std::vector<std::string> inputs{"x", "w", "r", c.bias ? "b" : ""};
  if (c.initial || c.peepholes) {
    m.initializer("h0", state_shape, run.initial_h);
    inputs.insert(inputs.end(), {"", "h0"});
    if (c.op == "LSTM") {
      m.initializer("c0", state_shape, run.initial_c);
      inputs.push_back("c0");
      if (c.peepholes) {
        m.initializer("p", {D, 3 * c.hidden}, run.p);
        inputs.push_back("p");
      }
    }
  }
  std::vector<std::string> outputs{"y", "y_h"};
  if (c.op == "LSTM") outputs.push_back("y_c");
  onnx::NodeProto& n = m.node(c.op, inputs, outputs, c.op);
  ModelBuilder::set_int(n, "hidden_size", c.hidden);
  if (c.bidirectional) ModelBuilder::set_string(n, "direction", "bidirectional");
  if (c.batch_first) ModelBuilder::set_int(n, "layout", 1);
  if (c.linear_before_reset) ModelBuilder::set_int(n, "linear_before_reset", 1);
  if (c.input_forget) ModelBuilder::set_int(n, "input_forget", 1);
  if (c.clip > 0) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("clip");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(c.clip);
  }
  for (const std::string& o : outputs) m.output(o);
  const auto graph = load_model_from_bytes(m.bytes(), ".", c.op + ".onnx").graph;
  SessionOptions options;
  options.precision = format;
  run.cpu = Session(graph, options).run({{"x", Tensor::from_vector(run.x, x_shape)}});
  // What the node read: its inputs on the format's grid.
  for (std::vector<float>* v : {&run.x, &run.w, &run.r, &run.b, &run.initial_h, &run.initial_c, &run.p})
    *v = in_format(*v, format);
  run.attrs.directions = static_cast<int>(D);
  run.attrs.hidden = c.hidden;
  run.attrs.clip = c.clip;
  run.attrs.layout = c.batch_first ? 1 : 0;
  const std::vector<RecurrentKind> kinds =
      c.op == "LSTM"  ? std::vector{RecurrentKind::Sigmoid, RecurrentKind::Tanh, RecurrentKind::Tanh}
      : c.op == "GRU" ? std::vector{RecurrentKind::Sigmoid, RecurrentKind::Tanh}
                      : std::vector{RecurrentKind::Tanh};
  for (int64_t d = 0; d < D; ++d)
    for (RecurrentKind k : kinds) run.attrs.activations.push_back({k, 0.f, 0.f});
  run.dims = {c.seq, c.batch, c.input};
  return run;
}

// The device's algorithm (backends/cuda/ops/recurrent_steps.cuh and the op files) on the host: per direction the
// projection onto Wb, the initial states, then per step the recurrence and the cells over every unit.
struct HostOutputs {
  std::vector<float> y, y_h, y_c;
};
HostOutputs run_cells_on_host(const RecurrentCase& c, const RecurrentRun& run, Format format) {
  const RecurrentAttrs& attrs = run.attrs;
  const RecurrentLayout layout = run.dims.layout(attrs);
  const int64_t H = c.hidden, B = c.batch, width = c.gates * H, units = B * H, D = attrs.directions;
  HostOutputs out;
  out.y.assign(static_cast<size_t>(shape_numel(run.dims.y_shape(attrs))), 0.f);
  out.y_h.assign(static_cast<size_t>(D * units), 0.f);
  out.y_c = out.y_h;
  std::vector<float> projected(static_cast<size_t>(c.seq * B * width)), recurrent(static_cast<size_t>(B * width));
  std::vector<float> h(static_cast<size_t>(units)), cell(h), z(h), candidate(h), reset(h);
  for (int64_t d = 0; d < D; ++d) {
    for (size_t i = 0; i < projected.size(); ++i)
      projected[i] = c.bias ? run.b[static_cast<size_t>(d * 2 * width) + i % size_t(width)] : 0.f;
    run_on_host(cuda::projection_call(run.dims, width, d, c.bias), run.x.data(), run.w.data(), projected.data());
    for (int64_t i = 0; i < units; ++i) {
      const size_t at = size_t(layout.state_at(d, i / H, i % H));
      h[size_t(i)] = c.initial ? run.initial_h[at] : 0.f;
      cell[size_t(i)] = c.initial ? run.initial_c[at] : 0.f;
    }
    const cuda::StepInputs in{layout,
                              c.gates,
                              d,
                              0,
                              projected.data(),
                              recurrent.data(),
                              c.bias ? run.b.data() + d * 2 * width + width : nullptr,
                              attrs.clip,
                              format};
    const int direction = static_cast<int>(d);
    const auto activation = [&](size_t which) {
      return attrs.activation(direction, which, size_t(c.gates == 4 ? 3 : c.gates == 3 ? 2 : 1));
    };
    // One step: the recurrence of the state, then `cells` over every unit.
    const auto steps = [&](auto& cell_kernel, const auto& cells) {
      for (int64_t s = 0; s < c.seq; ++s) {
        cell_kernel.in.t = d == 1 ? c.seq - 1 - s : s;
        run_on_host(cuda::recurrence_call(B, H, width, d, 0, width), h.data(), run.r.data(), recurrent.data());
        cells();
      }
    };
    if (c.op == "LSTM") {
      cuda::LstmStep lstm{in,
                          c.peepholes ? run.p.data() + d * 3 * H : nullptr,
                          h.data(),
                          cell.data(),
                          out.y.data(),
                          activation(0),
                          activation(1),
                          activation(2),
                          c.input_forget};
      steps(lstm, [&] {
        for (int64_t i = 0; i < units; ++i) lstm(i);
      });
    } else if (c.op == "GRU") {
      cuda::GruGates gates{
          in, h.data(), z.data(), candidate.data(), c.linear_before_reset ? nullptr : reset.data(), activation(0)};
      cuda::GruState state{in,       z.data(),     candidate.data(), !c.linear_before_reset,
                           h.data(), out.y.data(), activation(1)};
      steps(gates, [&] {
        state.in.t = gates.in.t;
        for (int64_t i = 0; i < units; ++i) gates(i);
        if (!c.linear_before_reset)
          run_on_host(cuda::recurrence_call(B, H, width, d, 2 * H, H), reset.data(), run.r.data(), candidate.data());
        for (int64_t i = 0; i < units; ++i) state(i);
      });
    } else {
      cuda::RnnStep rnn{in, h.data(), out.y.data(), activation(0)};
      steps(rnn, [&] {
        for (int64_t i = 0; i < units; ++i) rnn(i);
      });
    }
    for (int64_t i = 0; i < units; ++i) {
      out.y_h[size_t(layout.state_at(d, i / H, i % H))] = h[size_t(i)];
      out.y_c[size_t(layout.state_at(d, i / H, i % H))] = cell[size_t(i)];
    }
  }
  return out;
}

}  // namespace

TEST(CudaKernelsOnHost, RecurrentCellsAndStepsMatchTheCpuOps) {
  std::vector<RecurrentCase> cases;
  cases.push_back({"LSTM", 4});
  RecurrentCase lstm{"LSTM", 4};
  lstm.batch_first = true, lstm.peepholes = true, lstm.clip = 1.5f;
  cases.push_back(lstm);
  lstm.input_forget = true, lstm.bidirectional = false, lstm.initial = false, lstm.peepholes = false;
  cases.push_back(lstm);
  cases.push_back({"GRU", 3});
  RecurrentCase gru{"GRU", 3};
  gru.linear_before_reset = true, gru.batch_first = true;
  cases.push_back(gru);
  cases.push_back({"RNN", 1});
  RecurrentCase unbiased{"GRU", 3};  // without B: the recurrence's bias is zeros
  unbiased.bias = false;
  cases.push_back(unbiased);
  for (const RecurrentCase& c : cases)
    for (const Format format : {Format::FP32, Format::FP16}) {
      const std::string what = c.op + (c.batch_first ? " layout 1" : "") + (c.bias ? "" : " without B") + " " +
                               std::string(format_name(format));
      const RecurrentRun run = run_on_cpu(c, format);
      const HostOutputs host = run_cells_on_host(c, run, format);
      expect_close(host.y, run.cpu.at("y"), what + " Y");
      expect_close(host.y_h, run.cpu.at("y_h"), what + " Y_h");
      if (c.op == "LSTM") expect_close(host.y_c, run.cpu.at("y_c"), what + " Y_c");
    }
}

TEST(CudaKernelsOnHost, TransposedColumnsMatchTheCpuConvTranspose) {
  // 2-D, two groups, strides, uneven pads, output padding and dilation, with a bias.
  const Shape x_shape{2, 4, 5, 6}, w_shape{4, 3, 3, 2};
  const std::vector<float> x = values(static_cast<size_t>(shape_numel(x_shape)), 1.f, 11);
  const std::vector<float> w = values(static_cast<size_t>(shape_numel(w_shape)), 0.5f, 12), bias = values(6, 0.3f, 13);
  ModelBuilder m(17);
  m.input("x", onnx::TensorProto::FLOAT, x_shape);
  m.initializer("w", w_shape, w);
  m.initializer("b", {6}, bias);
  onnx::NodeProto& n = m.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "ConvTranspose");
  ModelBuilder::set_int(n, "group", 2);
  ModelBuilder::set_ints(n, "strides", {2, 3});
  ModelBuilder::set_ints(n, "pads", {1, 0, 0, 2});
  ModelBuilder::set_ints(n, "output_padding", {1, 2});
  ModelBuilder::set_ints(n, "dilations", {1, 2});
  m.output("y");
  const auto graph = load_model_from_bytes(m.bytes(), ".", "convtranspose.onnx").graph;
  const Tensor cpu = Session(graph).run({{"x", Tensor::from_vector(x, x_shape)}}).at("y");

  TransposedConvAttrs attrs;
  attrs.group = 2;
  WindowAttrs& window = attrs.window;
  window.strides = {2, 3}, window.pads = {1, 0, 0, 2}, window.output_padding = {1, 2}, window.dilations = {1, 2};
  const Tensor xt = Tensor::from_vector(x, x_shape), wt = Tensor::from_vector(w, w_shape),
               bt = Tensor::from_vector(bias, {6});
  const TransposedConv shape = transposed_conv("ConvTranspose", attrs, xt, wt, &bt);
  ASSERT_EQ(shape.out_shape, cpu.shape());
  const cuda::Col2im windows(shape.g);
  const int64_t channels = x_shape[1], mg = shape.group_outputs, out_channels = 2 * mg;
  std::vector<float> y(static_cast<size_t>(cpu.numel())),
      col(static_cast<size_t>(mg * windows.kernel_size * windows.in_size));
  for (size_t i = 0; i < y.size(); ++i) y[i] = bias[(i / size_t(windows.out_size)) % size_t(out_channels)];
  for (int64_t image = 0; image < x_shape[0]; ++image)
    for (int64_t g = 0; g < 2; ++g) {
      run_on_host(cuda::columns_call(shape, windows, channels, image, g), w.data(), x.data(), col.data());
      float* slice = y.data() + (image * out_channels + g * mg) * windows.out_size;
      for (int64_t i = 0; i < mg * windows.out_size; ++i) windows.add(col.data(), slice, i);
    }
  // The same GEMM and the same additions in the same order: bit for bit.
  for (int64_t i = 0; i < cpu.numel(); ++i) ASSERT_EQ(y[size_t(i)], cpu.data<float>()[i]) << "at " << i;
}
