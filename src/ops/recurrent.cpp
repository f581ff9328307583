#include "ops/recurrent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "ops/compute_buffer.h"

namespace mpa {

namespace {

// Name -> kind, and the ONNX default alpha/beta of those that take them (NaN: takes none).
struct ActivationSpec {
  RecurrentKind kind;
  float alpha, beta;
};

const std::map<std::string, ActivationSpec>& activation_specs() {
  using K = RecurrentKind;
  const float none = NAN;
  static const std::map<std::string, ActivationSpec> specs = {{"sigmoid", {K::Sigmoid, none, none}},
                                                              {"tanh", {K::Tanh, none, none}},
                                                              {"relu", {K::Relu, none, none}},
                                                              {"affine", {K::Affine, 1.f, 0.f}},
                                                              {"leakyrelu", {K::LeakyRelu, 0.01f, none}},
                                                              {"thresholdedrelu", {K::ThresholdedRelu, 1.f, none}},
                                                              {"scaledtanh", {K::ScaledTanh, 1.f, 1.f}},
                                                              {"hardsigmoid", {K::HardSigmoid, 0.2f, 0.5f}},
                                                              {"elu", {K::Elu, 1.f, none}},
                                                              {"softsign", {K::Softsign, none, none}},
                                                              {"softplus", {K::Softplus, none, none}}};
  return specs;
}

}  // namespace

RecurrentAttrs RecurrentAttrs::read(const OpInit& init, const std::vector<std::string>& defaults) {
  const std::string label = init.node().label();
  RecurrentAttrs a;
  const std::string direction = init.get_string("direction", "forward");
  if (direction == "bidirectional")
    a.directions = 2;
  else if (direction == "reverse")
    a.reverse_only = true;
  else if (direction != "forward")
    fail(label + ": direction '" + direction + "' is not forward, reverse or bidirectional");
  a.hidden = init.require_int("hidden_size");
  if (a.hidden < 1) fail(label + ": hidden_size " + std::to_string(a.hidden) + " must be positive");
  a.clip = init.get_float("clip", 0.f);
  a.layout = init.opset() >= 14 ? init.get_int("layout", 0) : 0;
  if (a.layout != 0 && a.layout != 1) fail(label + ": layout " + std::to_string(a.layout) + " is not 0 or 1");
  std::vector<std::string> names;
  if (const Attribute* given = init.node().attribute("activations")) names = given->strings;
  if (names.empty())
    for (int d = 0; d < a.directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != defaults.size() * size_t(a.directions))
    fail(label + ": " + std::to_string(names.size()) + " activations given, " +
         std::to_string(defaults.size() * size_t(a.directions)) + " expected");
  // alpha and beta lists are consumed in activation order by the functions that take them (as ONNX
  // Runtime reads them); functions without a given value keep their default.
  const std::vector<float> alphas = init.get_floats("activation_alpha"), betas = init.get_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    std::string key = name;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    auto spec = activation_specs().find(key);
    if (spec == activation_specs().end()) fail(label + ": activation '" + name + "' is not supported");
    RecurrentActivation f{spec->second.kind, spec->second.alpha, spec->second.beta};
    if (!std::isnan(f.alpha) && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (!std::isnan(f.beta) && next_beta < betas.size()) f.beta = betas[next_beta++];
    a.activations.push_back(f);
  }
  return a;
}

LstmAttrs LstmAttrs::read(const OpInit& init) {
  LstmAttrs a;
  static_cast<RecurrentAttrs&>(a) = RecurrentAttrs::read(init, {"Sigmoid", "Tanh", "Tanh"});
  a.input_forget = init.get_int("input_forget", 0) != 0;
  return a;
}

GruAttrs GruAttrs::read(const OpInit& init) {
  GruAttrs a;
  static_cast<RecurrentAttrs&>(a) = RecurrentAttrs::read(init, {"Sigmoid", "Tanh"});
  a.linear_before_reset = init.get_int("linear_before_reset", 0) != 0;
  return a;
}

RecurrentDims RecurrentDims::of(const KernelContext& ctx, const RecurrentAttrs& attrs, int64_t gates, DType dtype) {
  const std::string label = ctx.node().label();
  const Tensor& x = ctx.input(0);
  if (x.dtype() != dtype)
    throw UnsupportedType(label + ": element type " + dtype_name(x.dtype()) + " is not supported");
  if (x.rank() != 3) fail(label + ": X has shape " + shape_str(x.shape()) + ", needs rank 3");
  RecurrentDims dims;
  dims.seq = attrs.layout == 0 ? x.dim(0) : x.dim(1);
  dims.batch = attrs.layout == 0 ? x.dim(1) : x.dim(0);
  dims.input = x.dim(2);
  const int64_t width = gates * attrs.hidden, dirs = attrs.directions;
  auto expect = [&](size_t i, const char* name, const Shape& shape, bool optional = true) {
    if (optional && !ctx.has_input(i)) return;
    const Tensor& t = ctx.input(i);
    if (t.shape() != shape || t.dtype() != dtype)
      fail(label + ": " + name + " has shape " + shape_str(t.shape()) + " of " + dtype_name(t.dtype()) + ", expected " +
           shape_str(shape) + " of " + dtype_name(dtype));
  };
  expect(1, "W", {dirs, width, dims.input}, false);
  expect(2, "R", {dirs, width, attrs.hidden}, false);
  expect(3, "B", {dirs, 2 * width});
  expect(5, "initial_h", dims.state_shape(attrs));
  if (gates == 4) {
    expect(6, "initial_c", dims.state_shape(attrs));
    expect(7, "P", {dirs, 3 * attrs.hidden});
  }
  return dims;
}

template <class T>
RecurrentRun<T>::RecurrentRun(KernelContext& ctx, const RecurrentAttrs& attrs, int64_t gates)
    : ctx_(ctx), attrs_(attrs), gates_(gates) {
  const std::string label = ctx.node().label();
  const Tensor& x = ctx.input(0);
  const RecurrentDims dims = RecurrentDims::of(ctx, attrs, gates, DTypeOf<T>::value);
  seq_ = dims.seq;
  batch_ = dims.batch;
  input_ = dims.input;
  layout_ = dims.layout(attrs);
  const int64_t width = gates * attrs.hidden;
  lengths_.assign(size_t(batch_), seq_);
  if (ctx.has_input(4)) {
    const Tensor& lens = ctx.input(4);
    if (lens.numel() != batch_)
      fail(label + ": sequence_lens has " + std::to_string(lens.numel()) + " values for batch " +
           std::to_string(batch_));
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t len = lens.dtype() == DType::Int64 ? lens.data<int64_t>()[b] : lens.data<int32_t>()[b];
      if (len < 0 || len > seq_)
        fail(label + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) + " outside [0, " +
             std::to_string(seq_) + "]");
      lengths_[size_t(b)] = len;
    }
  }
  math_ = gemm_math(ctx.config(), x.dtype());
  state_format_ = value_format(ctx.config(), x.dtype());
  // X as rows in (t, b) order, whatever the layout.
  std::vector<T> rows;
  const T* xr = x.data<T>();
  if (attrs.layout == 1) {
    rows.resize(size_t(seq_ * batch_ * input_));
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t t = 0; t < seq_; ++t)
        std::memcpy(&rows[size_t((t * batch_ + b) * input_)], xr + layout_.x_row(t, b) * input_,
                    size_t(input_) * sizeof(T));
    xr = rows.data();
  }
  const T* w = ctx.input(1).data<T>();
  const T* bias = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
  for (int d = 0; d < attrs.directions; ++d) {
    std::vector<T> p(size_t(seq_ * batch_ * width));
    if (bias)
      for (int64_t r = 0; r < seq_ * batch_; ++r)
        std::memcpy(&p[size_t(r * width)], bias + d * 2 * width, size_t(width) * sizeof(T));
    cpu::gemm(false, true, seq_ * batch_, width, input_, T(1), xr, input_, w + d * width * input_, input_,
              bias ? T(1) : T(0), p.data(), width, math_);
    projected_.push_back(std::move(p));
  }
  recurrence_bias_zeros_.assign(size_t(width), T(0));
  if (ctx.output_requested(0)) {
    Tensor& y = ctx.allocate_output(0, DTypeOf<T>::value, dims.y_shape(attrs));
    std::fill(y.data<T>(), y.data<T>() + y.numel(), T(0));  // steps past a row's length stay 0
    y_ = y.data<T>();
  }
}

template <class T>
const T* RecurrentRun<T>::recurrence(int direction) const {
  return ctx_.input(2).data<T>() + int64_t(direction) * gates_ * attrs_.hidden * attrs_.hidden;
}

template <class T>
const T* RecurrentRun<T>::recurrence_bias(int direction) const {
  if (!ctx_.has_input(3)) return recurrence_bias_zeros_.data();
  const int64_t width = gates_ * attrs_.hidden;
  return ctx_.input(3).data<T>() + int64_t(direction) * 2 * width + width;
}

template <class T>
std::vector<T> RecurrentRun<T>::initial_state(int direction, size_t input_index) const {
  const int64_t H = attrs_.hidden;
  std::vector<T> state(size_t(batch_ * H), T(0));
  if (!ctx_.has_input(input_index)) return state;
  const Tensor& t = ctx_.input(input_index);  // its shape checked by RecurrentDims::of
  for (int64_t b = 0; b < batch_; ++b) {
    const int64_t from = layout_.state_at(direction, b, 0);
    std::memcpy(&state[size_t(b * H)], t.data<T>() + from, size_t(H) * sizeof(T));
  }
  return state;
}

template <class T>
void RecurrentRun<T>::times_transposed(const T* a, const T* w, int64_t width, T* rows) const {
  cpu::gemm(false, true, batch_, width, attrs_.hidden, T(1), a, attrs_.hidden, w, attrs_.hidden, T(0), rows, width,
            math_);
}

template <class T>
void RecurrentRun<T>::store_state(std::vector<T>& state) const {
  if constexpr (std::is_same_v<T, float>)
    if (state_format_ != Format::FP32 && state_format_ != Format::FP64)
      round_to_format(state_format_, state.data(), int64_t(state.size()));
}

template <class T>
void RecurrentRun<T>::emit(int direction, int64_t t, int64_t b, const T* h) {
  if (!y_) return;
  std::memcpy(y_ + layout_.y_at(t, direction, b, 0), h, size_t(attrs_.hidden) * sizeof(T));
}

template <class T>
void RecurrentRun<T>::write_final(size_t output, const std::vector<std::vector<T>>& finals) {
  if (!ctx_.output_requested(output)) return;
  const int64_t H = attrs_.hidden, dirs = attrs_.directions;
  Tensor& out =
      ctx_.allocate_output(output, DTypeOf<T>::value, RecurrentDims{seq_, batch_, input_}.state_shape(attrs_));
  for (int d = 0; d < dirs; ++d)
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t at = layout_.state_at(d, b, 0);
      std::memcpy(out.data<T>() + at, &finals[size_t(d)][size_t(b * H)], size_t(H) * sizeof(T));
    }
}

template class RecurrentRun<float>;
template class RecurrentRun<double>;

}  // namespace mpa
