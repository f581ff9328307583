// RoiAlign (10, 16, 22): pools each region of interest of X into output_height x output_width bins, each
// the average (or max) of bilinearly interpolated samples on a sampling_ratio grid (adaptive when 0), as
// ONNX's reference and ONNX Runtime compute it: max mode takes the largest weighted corner term, not the
// largest interpolated value. Opset 10 has no half-pixel offset; 16 adds coordinate_transformation_mode.
#include <cmath>

#include "ops/compute_buffer.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

// One sample's four neighbours (offsets in the H x W plane) and bilinear weights.
template <class Acc>
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  Acc w[4] = {0, 0, 0, 0};
};

class RoiAlignOp : public OpKernel {
 public:
  explicit RoiAlignOp(const OpInit& init)
      : half_pixel_(init.opset() >= 16 &&
                    init.get_string("coordinate_transformation_mode", "half_pixel") == "half_pixel"),
        max_(init.get_string("mode", "avg") == "max"),
        out_h_(init.get_int("output_height", 1)),
        out_w_(init.get_int("output_width", 1)),
        sampling_ratio_(init.get_int("sampling_ratio", 0)),
        spatial_scale_(init.get_float("spatial_scale", 1.0f)) {
    const std::string mode = init.get_string("mode", "avg");
    if (mode != "avg" && mode != "max") fail(init.node().label() + ": mode '" + mode + "' is not avg or max");
    if (out_h_ <= 0 || out_w_ <= 0 || sampling_ratio_ < 0)
      fail(init.node().label() + ": output sizes must be positive and sampling_ratio not negative");
  }

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    if (x.rank() != 4) fail(node.label() + ": X must be [N, C, H, W], got " + shape_str(x.shape()));
    if (rois.rank() != 2 || rois.dim(1) != 4)
      fail(node.label() + ": rois must be [R, 4], got " + shape_str(rois.shape()));
    if (rois.dtype() != x.dtype()) fail(node.label() + ": rois and X must have one element type");
    const std::vector<int64_t> batch_of = index_values(node, ctx.input(2));
    const int64_t count = rois.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    if (int64_t(batch_of.size()) != count)
      fail(node.label() + ": batch_indices has " + std::to_string(batch_of.size()) + " entries for " +
           std::to_string(count) + " rois");
    for (int64_t b : batch_of)
      if (b < 0 || b >= x.dim(0)) fail(node.label() + ": batch index " + std::to_string(b) + " is out of range");
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), {count, channels, out_h_, out_w_});
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      std::vector<Acc> x_holder, roi_holder;
      const Acc* in = as_acc<T>(x, x_holder);
      const Acc* box = as_acc<T>(rois, roi_holder);
      for (int64_t i = 0; i < count * 4; ++i)
        if (!std::isfinite(box[i]) || std::fabs(box[i] * static_cast<Acc>(spatial_scale_)) > Acc(1 << 24))
          fail(node.label() + ": roi " + std::to_string(i / 4) + " has a coordinate that is not finite or beyond 2^24");
      AccOutput<T> out(y);
      Acc* o = out.data();
      parallel_for(count, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          pool_roi<Acc>(in, box + r * 4, batch_of[size_t(r)], channels, height, width,
                        o + r * channels * out_h_ * out_w_);
      });
      out.finish();
    });
  }

 private:
  template <class Acc>
  void pool_roi(const Acc* in, const Acc* box, int64_t batch, int64_t channels, int64_t height, int64_t width,
                Acc* out) const {
    const Acc offset = half_pixel_ ? Acc(0.5) : Acc(0);
    const Acc scale = static_cast<Acc>(spatial_scale_);
    const Acc start_w = box[0] * scale - offset, start_h = box[1] * scale - offset;
    Acc roi_w = box[2] * scale - offset - start_w, roi_h = box[3] * scale - offset - start_h;
    if (!half_pixel_) {  // malformed regions become 1 x 1
      roi_w = std::max(roi_w, Acc(1));
      roi_h = std::max(roi_h, Acc(1));
    }
    const Acc bin_h = roi_h / Acc(out_h_), bin_w = roi_w / Acc(out_w_);
    const int64_t grid_h = sampling_ratio_ > 0 ? sampling_ratio_ : int64_t(std::ceil(roi_h / Acc(out_h_)));
    const int64_t grid_w = sampling_ratio_ > 0 ? sampling_ratio_ : int64_t(std::ceil(roi_w / Acc(out_w_)));
    const Acc samples = Acc(std::max<int64_t>(grid_h * grid_w, 1));
    // The samples' neighbours and weights, shared by every channel.
    std::vector<Sample<Acc>> grid;
    grid.reserve(size_t(out_h_ * out_w_ * std::max<int64_t>(grid_h * grid_w, 0)));
    for (int64_t ph = 0; ph < out_h_; ++ph)
      for (int64_t pw = 0; pw < out_w_; ++pw)
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const Acc yy = start_h + Acc(ph) * bin_h + (Acc(iy) + Acc(0.5)) * bin_h / Acc(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const Acc xx = start_w + Acc(pw) * bin_w + (Acc(ix) + Acc(0.5)) * bin_w / Acc(grid_w);
            grid.push_back(sample_at<Acc>(yy, xx, height, width));
          }
        }
    for (int64_t c = 0; c < channels; ++c) {
      const Acc* plane = in + (batch * channels + c) * height * width;
      const Sample<Acc>* s = grid.data();
      for (int64_t bin = 0; bin < out_h_ * out_w_; ++bin) {
        Acc value = 0;
        for (int64_t k = 0; k < grid_h * grid_w; ++k, ++s) {
          if (max_) {
            const Acc term = std::max({s->w[0] * plane[s->pos[0]], s->w[1] * plane[s->pos[1]],
                                       s->w[2] * plane[s->pos[2]], s->w[3] * plane[s->pos[3]]});
            value = k == 0 ? term : std::max(value, term);
          } else {
            value += s->w[0] * plane[s->pos[0]] + s->w[1] * plane[s->pos[1]] + s->w[2] * plane[s->pos[2]] +
                     s->w[3] * plane[s->pos[3]];
          }
        }
        out[c * out_h_ * out_w_ + bin] = max_ ? value : value / samples;
      }
    }
  }

  template <class Acc>
  static Sample<Acc> sample_at(Acc y, Acc x, int64_t height, int64_t width) {
    Sample<Acc> s;
    if (y < Acc(-1) || y > Acc(height) || x < Acc(-1) || x > Acc(width)) return s;  // outside: contributes 0
    y = std::max(y, Acc(0));
    x = std::max(x, Acc(0));
    int64_t y_low = int64_t(y), x_low = int64_t(x), y_high, x_high;
    if (y_low >= height - 1) {
      y_high = y_low = height - 1;
      y = Acc(y_low);
    } else {
      y_high = y_low + 1;
    }
    if (x_low >= width - 1) {
      x_high = x_low = width - 1;
      x = Acc(x_low);
    } else {
      x_high = x_low + 1;
    }
    const Acc ly = y - Acc(y_low), lx = x - Acc(x_low), hy = Acc(1) - ly, hx = Acc(1) - lx;
    s.pos[0] = y_low * width + x_low;
    s.pos[1] = y_low * width + x_high;
    s.pos[2] = y_high * width + x_low;
    s.pos[3] = y_high * width + x_high;
    s.w[0] = hy * hx;
    s.w[1] = hy * lx;
    s.w[2] = ly * hx;
    s.w[3] = ly * lx;
    return s;
  }

  bool half_pixel_, max_;
  int64_t out_h_, out_w_, sampling_ratio_;
  float spatial_scale_;
};

}  // namespace

// Averages of interpolated samples, summed in the accumulation type (float for 16-bit inputs).
MPA_OP_TRAITS("", "RoiAlign", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {2}});
MPA_REGISTER_OP("", "RoiAlign", RoiAlignOp, 10, 16, 22);

}  // namespace mpa
