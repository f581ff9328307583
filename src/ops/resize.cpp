// Resize (opsets 10-19) and Upsample (1-10), after the ONNX reference: separable, one pass per resized
// axis. For each output index of an axis, the source coordinate x comes from the coordinate transformation
// mode; the taps are the n input indices around x (edge-clamped, or dropped and renormalised with
// exclude_outside) with nearest / linear / cubic / antialiased weights. Nearest gathers exact stored values
// (any element type); linear and cubic compute in float (double for float64 and integers, which are then
// rounded and saturated as the reference does).
#include "ops/resize.h"

#include <cmath>
#include <limits>

#include "kernels/interpolate.h"
#include "ops/compute_buffer.h"

namespace mpa {

namespace {

double source_coordinate(const ResizeSettings& s, int64_t y, double scale, int64_t in, int64_t out, double roi_start,
                         double roi_end, bool& outside) {
  const double out_width = scale * static_cast<double>(in), yd = static_cast<double>(y);
  const std::string& m = s.coordinate_mode;
  outside = false;
  if (m == "align_corners") return out_width == 1 ? 0.0 : yd * static_cast<double>(in - 1) / (out_width - 1);
  if (m == "asymmetric") return yd / scale;
  if (m == "tf_crop_and_resize") {
    double x = out_width == 1 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
                              : yd * (roi_end - roi_start) * static_cast<double>(in - 1) / (out_width - 1);
    x += roi_start * static_cast<double>(in - 1);
    outside = x < 0 || x > static_cast<double>(in - 1);
    return x;
  }
  if (m == "pytorch_half_pixel") return out_width == 1 ? -0.5 : (yd + 0.5) / scale - 0.5;
  if (m == "half_pixel") return (yd + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out) / out_width, center = static_cast<double>(in) / 2;
    return center * (1 - adjustment) + (yd + 0.5) / scale - 0.5;
  }
  if (m == "tf_half_pixel_for_nn") return (yd + 0.5) / scale;
  fail("unknown coordinate_transformation_mode '" + m + "'");
}

// Weights for taps base - n/2 + 1 + j, j in [0, n), given ratio in (0, 1].
std::vector<double> tap_weights(const ResizeSettings& s, double r, double scale) {
  auto cubic = [&s](double x) { return cubic_convolution(x, s.cubic_a); };
  if (s.mode == ResizeMode::Nearest) {
    if (r == 1.0) return {0, 1};
    const std::string& nm = s.nearest_mode;
    if (nm == "round_prefer_floor") return {r <= 0.5 ? 1.0 : 0.0, r > 0.5 ? 1.0 : 0.0};
    if (nm == "round_prefer_ceil") return {r < 0.5 ? 1.0 : 0.0, r >= 0.5 ? 1.0 : 0.0};
    if (nm == "floor") return {1, 0};
    if (nm == "ceil") return {0, 1};
    fail("unknown nearest_mode '" + nm + "'");
  }
  if (!s.antialias) {
    if (s.mode == ResizeMode::Linear) return {1 - r, r};
    return {cubic(r + 1), cubic(r), cubic(1 - r), cubic(2 - r)};
  }
  const double sc = std::min(scale, 1.0);
  const int64_t start = static_cast<int64_t>(std::floor((s.mode == ResizeMode::Linear ? -1.0 : -2.0) / sc) + 1);
  std::vector<double> w;
  double sum = 0;
  for (int64_t i = start; i < 2 - start; ++i) {
    const double x = sc * (static_cast<double>(i) - r);
    const double v = s.mode == ResizeMode::Linear ? std::clamp(1 - std::abs(x), 0.0, 1.0) : cubic(x);
    w.push_back(v);
    sum += v;
  }
  for (double& v : w) v /= sum;
  return w;
}

AxisTaps build_taps(const ResizeSettings& s, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  AxisTaps t;
  for (int64_t y = 0; y < out; ++y) {
    bool outside = false;
    const double x = source_coordinate(s, y, scale, in, out, roi_start, roi_end, outside);
    const double fl = std::floor(x);
    const bool integer = x == fl;
    const int64_t base = static_cast<int64_t>(fl) - (integer ? 1 : 0);
    const double r = integer ? 1.0 : x - fl;
    std::vector<double> w = tap_weights(s, r, scale);
    const int64_t n = static_cast<int64_t>(w.size());
    t.n = n;
    std::vector<int64_t> idx(w.size());
    double kept = 0;
    for (int64_t j = 0; j < n; ++j) {
      idx[static_cast<size_t>(j)] = base - n / 2 + 1 + j;
      const bool out_of_range = idx[static_cast<size_t>(j)] < 0 || idx[static_cast<size_t>(j)] >= in;
      if (s.exclude_outside && s.mode != ResizeMode::Nearest && out_of_range) w[static_cast<size_t>(j)] = 0;
      kept += w[static_cast<size_t>(j)];
      idx[static_cast<size_t>(j)] = std::clamp<int64_t>(idx[static_cast<size_t>(j)], 0, in - 1);
    }
    if (s.exclude_outside && s.mode != ResizeMode::Nearest && kept != 0)
      for (double& v : w) v /= kept;
    t.index.insert(t.index.end(), idx.begin(), idx.end());
    t.weight.insert(t.weight.end(), w.begin(), w.end());
    t.extrapolate.push_back(outside ? 1 : 0);
  }
  return t;
}

// One axis: src [outer, in, inner] -> dst [outer, out, inner].
template <class V>
void resize_axis(const V* src, V* dst, int64_t outer, int64_t in, int64_t out, int64_t inner, const AxisTaps& t,
                 bool nearest, V extrapolation) {
  // A tap is copied (nearest mode, integer values): the first tap of nonzero weight, or the last.
  const auto copied_tap = [&](int64_t y) {
    const int64_t* idx = &t.index[static_cast<size_t>(y * t.n)];
    const double* w = &t.weight[static_cast<size_t>(y * t.n)];
    int64_t j = 0;
    while (j + 1 < t.n && w[j] == 0) ++j;
    return idx[j];
  };
  if (inner == 1 && (nearest || !std::is_floating_point_v<V>)) {
    // The last axis: one gather per output row through the source index of each position (-1: extrapolated),
    // where a row per element of the loop below spent some 17 instructions per value (YOLOX's upsampling).
    std::vector<int64_t> from(static_cast<size_t>(out));
    for (int64_t y = 0; y < out; ++y)
      from[static_cast<size_t>(y)] = t.extrapolate[static_cast<size_t>(y)] ? -1 : copied_tap(y);
    parallel_for(outer, std::max<int64_t>(1, 4096 / std::max<int64_t>(out, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const V* s = src + o * in;
        V* d = dst + o * out;
        for (int64_t y = 0; y < out; ++y)
          d[y] = from[static_cast<size_t>(y)] < 0 ? extrapolation : s[from[static_cast<size_t>(y)]];
      }
    });
    return;
  }
  parallel_for(outer * out, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t o = row / out, y = row % out;
      V* d = dst + row * inner;
      const V* s = src + o * in * inner;
      if (t.extrapolate[static_cast<size_t>(y)]) {
        std::fill(d, d + inner, extrapolation);
        continue;
      }
      if (nearest || !std::is_floating_point_v<V>) {
        const int64_t from = copied_tap(y);
        std::copy(s + from * inner, s + (from + 1) * inner, d);
        continue;
      }
      if constexpr (std::is_floating_point_v<V>) {
        const int64_t* idx = &t.index[static_cast<size_t>(y * t.n)];
        const double* w = &t.weight[static_cast<size_t>(y * t.n)];
        std::fill(d, d + inner, V(0));
        for (int64_t j = 0; j < t.n; ++j) {
          const V wj = static_cast<V>(w[j]);
          if (wj == V(0)) continue;
          const V* sj = s + idx[j] * inner;
          for (int64_t i = 0; i < inner; ++i) d[i] += wj * sj[i];
        }
      }
    }
  });
}

}  // namespace

ResizeAttrs::ResizeAttrs(const OpInit& init, bool upsample) : upsample_(upsample), opset_(init.opset()) {
  const std::string label = init.node().label();
  const std::string mode = init.get_string("mode", "nearest");
  if (mode == "nearest")
    s_.mode = ResizeMode::Nearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
    s_.mode = ResizeMode::Linear;
  else if (mode == "cubic" || mode == "bicubic")
    s_.mode = ResizeMode::Cubic;
  else
    fail(label + ": unknown mode '" + mode + "'");
  if (upsample_ || opset_ < 11) {
    s_.coordinate_mode = "asymmetric";
    s_.nearest_mode = "floor";
  } else {
    s_.coordinate_mode = init.get_string("coordinate_transformation_mode", "half_pixel");
    s_.nearest_mode = init.get_string("nearest_mode", "round_prefer_floor");
  }
  s_.cubic_a = init.get_float("cubic_coeff_a", -0.75f);
  s_.exclude_outside = init.get_int("exclude_outside", 0) != 0;
  s_.extrapolation = init.get_float("extrapolation_value", 0.f);
  s_.antialias = init.get_int("antialias", 0) != 0;
  s_.keep_aspect = init.get_string("keep_aspect_ratio_policy", "stretch");
  axes_ = init.get_ints("axes");
  if (upsample_ && opset_ < 9) {
    attr_scales_ = init.get_floats("scales");
    if (attr_scales_.empty() && init.has("height_scale"))
      attr_scales_ = {1.f, 1.f, init.get_float("height_scale", 1.f), init.get_float("width_scale", 1.f)};
    if (!(!attr_scales_.empty())) fail(label + ": attribute 'scales' is missing");
  }
  const std::string& cm = s_.coordinate_mode;
  if (!(cm == "half_pixel" || cm == "half_pixel_symmetric" || cm == "pytorch_half_pixel" || cm == "align_corners" ||
        cm == "asymmetric" || cm == "tf_crop_and_resize" || cm == "tf_half_pixel_for_nn"))
    fail(label + ": unknown coordinate_transformation_mode '" + cm + "'");
  if (!(s_.keep_aspect == "stretch" || s_.keep_aspect == "not_larger" || s_.keep_aspect == "not_smaller"))
    fail(label + ": unknown keep_aspect_ratio_policy '" + s_.keep_aspect + "'");
}

ResizePlan ResizeAttrs::plan(const KernelContext& ctx) const {
  const std::string label = ctx.node().label();
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  // Inputs by version: Upsample<9 attr; Upsample 9/10 and Resize 10: (X, scales); Resize 11+: (X, roi, scales,
  // sizes).
  std::vector<double> scales_in, sizes_in, roi;
  if (upsample_ && opset_ < 9) {
    scales_in.assign(attr_scales_.begin(), attr_scales_.end());
  } else if (upsample_ || opset_ < 11) {
    scales_in = ctx.input(1).to_double_vector();
  } else {
    if (const Tensor* t = ctx.optional_input(1)) roi = t->to_double_vector();
    if (const Tensor* t = ctx.optional_input(2)) scales_in = t->to_double_vector();
    if (const Tensor* t = ctx.optional_input(3)) sizes_in = t->to_double_vector();
  }
  std::vector<int64_t> axes = axes_;
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    if (!(a >= -rank && a < rank))
      fail(label + ": axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    if (a < 0) a += rank;
    if (!(!seen[static_cast<size_t>(a)])) fail(label + ": axis " + std::to_string(a) + " repeated");
    seen[static_cast<size_t>(a)] = true;
  }
  const size_t na = axes.size();
  if (!(scales_in.empty() != sizes_in.empty())) fail(label + ": exactly one of scales and sizes must be given");
  std::vector<double> scale(static_cast<size_t>(rank), 1.0), roi_start(scale.size(), 0.0), roi_end(scale.size(), 1.0);
  Shape out_shape = x.shape();
  if (!scales_in.empty()) {
    if (!(scales_in.size() == na))
      fail(label + ": " + std::to_string(scales_in.size()) + " scales for " + std::to_string(na) + " axes");
    for (size_t i = 0; i < na; ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      if (!(scales_in[i] > 0)) fail(label + ": scale " + std::to_string(scales_in[i]) + " must be positive");
      scale[a] = scales_in[i];
      out_shape[a] = static_cast<int64_t>(std::floor(scales_in[i] * static_cast<double>(x.dim(static_cast<int>(a)))));
    }
  } else {
    if (!(sizes_in.size() == na))
      fail(label + ": " + std::to_string(sizes_in.size()) + " sizes for " + std::to_string(na) + " axes");
    for (size_t i = 0; i < na; ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      if (!(sizes_in[i] >= 0)) fail(label + ": negative output size " + std::to_string(sizes_in[i]));
      scale[a] = sizes_in[i] / static_cast<double>(x.dim(static_cast<int>(a)));
    }
    if (s_.keep_aspect == "stretch") {
      for (size_t i = 0; i < na; ++i) out_shape[static_cast<size_t>(axes[i])] = static_cast<int64_t>(sizes_in[i]);
    } else {
      double common = scale[static_cast<size_t>(axes[0])];
      for (int64_t a : axes)
        common = s_.keep_aspect == "not_larger" ? std::min(common, scale[static_cast<size_t>(a)])
                                                : std::max(common, scale[static_cast<size_t>(a)]);
      for (int64_t a : axes) {
        scale[static_cast<size_t>(a)] = common;
        out_shape[static_cast<size_t>(a)] =
            static_cast<int64_t>(common * static_cast<double>(x.dim(static_cast<int>(a))) + 0.5);
      }
    }
  }
  if (s_.coordinate_mode == "tf_crop_and_resize") {
    if (!(roi.size() == 2 * na || roi.size() == 2 * static_cast<size_t>(rank)))
      fail(label + ": roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * na));
    const bool per_axis = roi.size() == 2 * na;
    for (size_t i = 0; i < (per_axis ? na : static_cast<size_t>(rank)); ++i) {
      const size_t a = per_axis ? static_cast<size_t>(axes[i]) : i;
      const size_t count = per_axis ? na : static_cast<size_t>(rank);
      roi_start[a] = roi[i];
      roi_end[a] = roi[count + i];
    }
  }
  // Axes that change anything, one pass each.
  ResizePlan plan{out_shape, {}};
  Shape dims = x.shape();
  for (int64_t d = 0; d < rank; ++d) {
    const auto a = static_cast<size_t>(d);
    if (!(out_shape[a] != dims[a] || scale[a] != 1.0 || s_.coordinate_mode == "tf_crop_and_resize")) continue;
    if (shape_numel(out_shape) == 0) break;
    require(dims[a] > 0, label + ": cannot resize an empty axis");
    ResizePass pass;
    for (size_t i = 0; i < a; ++i) pass.outer *= dims[i];
    for (size_t i = a + 1; i < dims.size(); ++i) pass.inner *= dims[i];
    pass.in = dims[a];
    pass.out = out_shape[a];
    pass.taps = build_taps(s_, dims[a], out_shape[a], scale[a], roi_start[a], roi_end[a]);
    plan.passes.push_back(std::move(pass));
    dims[a] = out_shape[a];
  }
  return plan;
}

namespace {

class ResizeOp : public OpKernel {
 public:
  ResizeOp(const OpInit& init, bool upsample) : attrs_(init, upsample) {}

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& x = ctx.input(0);
    const ResizePlan plan = attrs_.plan(ctx);
    const ResizeSettings& s = attrs_.settings();
    Tensor& y = ctx.allocate_output(0, x.dtype(), plan.out_shape);
    if (y.numel() == 0) return;
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        if (!(s.mode == ResizeMode::Nearest)) fail(label + ": linear/cubic resize of a bool tensor");
        run<uint8_t, uint8_t>(x, y, plan);  // bool is stored as one byte
      } else if (s.mode == ResizeMode::Nearest) {
        run<T, T>(x, y, plan);
      } else {
        run<T, std::conditional_t<std::is_same_v<compute_t<T>, float>, float, double>>(x, y, plan);
      }
    });
  }

 private:
  template <class T, class V>
  void run(const Tensor& x, Tensor& y, const ResizePlan& plan) const {
    const ResizeSettings& s = attrs_.settings();
    std::vector<V> cur(static_cast<size_t>(x.numel())), next;
    const T* px = static_cast<const T*>(x.raw());
    if constexpr (std::is_same_v<T, V>)
      std::copy(px, px + x.numel(), cur.begin());
    else
      widen(px, cur.data(), x.numel());
    V extrapolation{};
    if constexpr (std::is_floating_point_v<V>)
      extrapolation = static_cast<V>(s.extrapolation);
    else if constexpr (std::is_same_v<V, Float16> || std::is_same_v<V, BFloat16>)
      extrapolation = store<V>(static_cast<float>(s.extrapolation));
    else
      extrapolation = static_cast<V>(s.extrapolation);
    for (const ResizePass& pass : plan.passes) {
      next.resize(static_cast<size_t>(pass.outer * pass.out * pass.inner));
      resize_axis(cur.data(), next.data(), pass.outer, pass.in, pass.out, pass.inner, pass.taps,
                  s.mode == ResizeMode::Nearest, extrapolation);
      cur.swap(next);
    }
    T* py = static_cast<T*>(y.raw());
    if constexpr (std::is_same_v<T, V>) {
      std::copy(cur.begin(), cur.end(), py);
    } else if constexpr (std::is_integral_v<T>) {
      for (size_t i = 0; i < cur.size(); ++i) {
        const double v = std::nearbyint(static_cast<double>(cur[i]));
        py[i] = static_cast<T>(std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                                          static_cast<double>(std::numeric_limits<T>::max())));
      }
    } else {
      narrow(cur.data(), py, y.numel());
    }
  }

  ResizeAttrs attrs_;
};

struct ResizeKernel : ResizeOp {
  explicit ResizeKernel(const OpInit& init) : ResizeOp(init, false) {}
};
struct UpsampleKernel : ResizeOp {
  explicit UpsampleKernel(const OpInit& init) : ResizeOp(init, true) {}
};

}  // namespace

MPA_OP_TRAITS("", "Resize", {.precision = PrecisionClass::Elementwise, .host_inputs = {1, 2, 3}});
MPA_REGISTER_OP("", "Resize", ResizeKernel, 10, 11, 13, 18, 19);
MPA_OP_TRAITS("", "Upsample", {.precision = PrecisionClass::Elementwise, .host_inputs = {1}});
MPA_REGISTER_OP("", "Upsample", UpsampleKernel, 1, 7, 9, 10);

}  // namespace mpa
