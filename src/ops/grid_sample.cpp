// GridSample (16, 20, 22) and AffineGrid (20): the spatial transformer pair.
//
// GridSample: X [N, C, D1..Dr], grid [N, O1..Or, r] of normalised coordinates in [-1, 1] (the last entry
// indexes Dr, as PyTorch's grid_sample orders them); output [N, C, O1..Or]. Opset 16 takes 4-D X with modes
// bilinear/nearest/bicubic, opset 20 any rank with linear/nearest/cubic (either spelling is accepted).
// Coordinates, padding and the taps follow the ONNX reference (after PyTorch's GridSampler.h): nearest
// rounds half to even, cubic is Keys' kernel with a = -0.75, and with border/reflection padding a
// coordinate outside the image is clamped or reflected before the taps are taken, each tap again after.
// Weights and sums are in compute_t (float for 16-bit X), one rounding per output.
//
// AffineGrid: theta [N, 2, 3] or [N, 3, 4] times the normalised base grid of size [N, C, H, W] or
// [N, C, D, H, W]: output [N, H, W, 2] or [N, D, H, W, 3].
#include <algorithm>
#include <cmath>

#include "common/parallel.h"
#include "kernels/interpolate.h"
#include "ops/op.h"
#include "ops/shape_helpers.h"

namespace mpa {
namespace {

enum class GridMode { Nearest, Linear, Cubic };
enum class GridPadding { Zeros, Border, Reflection };

// Normalised coordinate g in [-1, 1] to a pixel coordinate on an axis of `size` pixels.
template <class A>
A denormalize(A g, int64_t size, bool align_corners) {
  const A s = static_cast<A>(size);
  return align_corners ? (g + A(1)) / A(2) * (s - A(1)) : ((g + A(1)) * s - A(1)) / A(2);
}

// Reflects x by the nearer border until it lies in [lo, hi].
template <class A>
A reflect(A x, A lo, A hi) {
  const A range = hi - lo;
  if (range <= A(0)) return lo;
  if (x < lo) {
    const A dx = lo - x;
    const int64_t flips = static_cast<int64_t>(dx / range);
    const A r = dx - static_cast<A>(flips) * range;
    return flips % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const A dx = x - hi;
    const int64_t flips = static_cast<int64_t>(dx / range);
    const A r = dx - static_cast<A>(flips) * range;
    return flips % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

class GridSampleOp : public OpKernel {
 public:
  explicit GridSampleOp(const OpInit& init)
      : rank4_only_(init.opset() < 20), align_corners_(init.get_int("align_corners", 0) != 0) {
    const std::string who = init.node().label();
    const std::string mode = init.get_string("mode", init.opset() < 20 ? "bilinear" : "linear");
    if (mode == "nearest")
      mode_ = GridMode::Nearest;
    else if (mode == "linear" || mode == "bilinear")
      mode_ = GridMode::Linear;
    else if (mode == "cubic" || mode == "bicubic")
      mode_ = GridMode::Cubic;
    else
      fail(who + ": unknown mode '" + mode + "'");
    const std::string padding = init.get_string("padding_mode", "zeros");
    if (padding == "zeros")
      padding_ = GridPadding::Zeros;
    else if (padding == "border")
      padding_ = GridPadding::Border;
    else if (padding == "reflection")
      padding_ = GridPadding::Reflection;
    else
      fail(who + ": unknown padding_mode '" + padding + "'");
  }

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    const int64_t r = x.rank() - 2;
    if (r < 1 || (rank4_only_ && r != 2))
      fail(who + ": X must be [N, C, D1..Dr]" + (rank4_only_ ? " with r = 2 before opset 20" : "") + ", got " +
           shape_str(x.shape()));
    if (grid.rank() != r + 2 || grid.shape()[0] != x.shape()[0] || grid.shape().back() != r)
      fail(who + ": grid must be [N, O1..O" + std::to_string(r) + ", " + std::to_string(r) + "] for X " +
           shape_str(x.shape()) + ", got " + shape_str(grid.shape()));
    if (!dtype_is_float(grid.dtype())) fail(who + ": grid must be a float tensor");
    Shape out_shape = {x.shape()[0], x.shape()[1]};
    for (int64_t i = 0; i < r; ++i) out_shape.push_back(grid.shape()[static_cast<size_t>(i + 1)]);
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), out_shape);
    if (y.numel() == 0) return;
    const std::vector<double> coords = grid.to_double_vector();
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      sample<T>(x, coords, r, y);
    });
  }

 private:
  template <class T>
  void sample(const Tensor& x, const std::vector<double>& coords, int64_t r, Tensor& y) const {
    using A = compute_t<T>;
    const int64_t batch = x.shape()[0], channels = x.shape()[1];
    const int64_t taps = mode_ == GridMode::Nearest ? 1 : (mode_ == GridMode::Linear ? 2 : 4);
    std::vector<int64_t> size(static_cast<size_t>(r)), in_stride(static_cast<size_t>(r));
    int64_t image = 1;
    for (int64_t i = r - 1; i >= 0; --i) {
      size[static_cast<size_t>(i)] = x.shape()[static_cast<size_t>(i + 2)];
      in_stride[static_cast<size_t>(i)] = image;
      image *= size[static_cast<size_t>(i)];
    }
    const int64_t points = y.numel() / (batch * channels);
    const T* xs = x.data<T>();
    T* ys = y.data<T>();
    parallel_for(batch * points, std::max<int64_t>(1, 2048 / std::max<int64_t>(channels, 1)),
                 [&](int64_t b, int64_t e) {
                   // Per axis: the taps' offsets into the image (-1: a zero pad) and weights.
                   std::vector<int64_t> offset(static_cast<size_t>(r * taps));
                   std::vector<A> weight(static_cast<size_t>(r * taps));
                   std::vector<int64_t> digit(static_cast<size_t>(r));
                   for (int64_t p = b; p < e; ++p) {
                     const int64_t n = p / points;
                     for (int64_t i = 0; i < r; ++i) {
                       const A g = static_cast<A>(coords[static_cast<size_t>(p * r + (r - 1 - i))]);
                       axis_taps(g, size[static_cast<size_t>(i)], in_stride[static_cast<size_t>(i)], &offset[i * taps],
                                 &weight[i * taps]);
                     }
                     for (int64_t c = 0; c < channels; ++c) {
                       const T* img = xs + (n * channels + c) * image;
                       A sum = A(0);
                       std::fill(digit.begin(), digit.end(), 0);
                       for (;;) {  // every combination of one tap per axis
                         int64_t at = 0;
                         A w = A(1);
                         for (int64_t i = 0; i < r; ++i) {
                           const int64_t k = i * taps + digit[static_cast<size_t>(i)];
                           at = offset[k] < 0 || at < 0 ? -1 : at + offset[k];
                           w *= weight[k];
                         }
                         if (at >= 0) sum += w * static_cast<A>(load(img[at]));
                         int64_t i = r - 1;
                         while (i >= 0 && ++digit[static_cast<size_t>(i)] == taps) digit[static_cast<size_t>(i--)] = 0;
                         if (i < 0) break;
                       }
                       ys[(n * channels + c) * points + p % points] = store<T>(sum);
                     }
                   }
                 });
  }

  // The taps of one axis for normalised coordinate g: offsets (index * stride, -1 for a zero pad) and weights.
  template <class A>
  void axis_taps(A g, int64_t size, int64_t stride, int64_t* offset, A* weight) const {
    // Pixel centres span [0, size - 1] with align_corners, else the pixel edges [-0.5, size - 0.5].
    const A lo = align_corners_ ? A(0) : A(-0.5), hi = align_corners_ ? A(size - 1) : A(size) - A(0.5);
    A coord = denormalize(g, size, align_corners_);
    if (mode_ == GridMode::Nearest) coord = std::nearbyint(coord);
    if (coord < lo || coord > hi) {
      if (padding_ == GridPadding::Border)
        coord = std::min(std::max(coord, A(0)), A(size - 1));
      else if (padding_ == GridPadding::Reflection)
        coord = reflect(coord, lo, hi);
    }
    const auto tap = [&](int64_t index) -> int64_t {
      if (padding_ == GridPadding::Border)
        index = std::min(std::max<int64_t>(index, 0), size - 1);
      else if (padding_ == GridPadding::Reflection)
        index = static_cast<int64_t>(reflect(static_cast<A>(index), lo, hi));
      return index >= 0 && index < size ? index * stride : -1;
    };
    if (mode_ == GridMode::Nearest) {
      offset[0] = tap(static_cast<int64_t>(coord));
      weight[0] = A(1);
      return;
    }
    const A base = std::floor(coord), t = coord - base;
    const int64_t first = static_cast<int64_t>(base);
    if (mode_ == GridMode::Linear) {
      offset[0] = tap(first);
      offset[1] = tap(first + 1);
      weight[0] = A(1) - t;
      weight[1] = t;
      return;
    }
    const A a = A(-0.75);
    for (int64_t k = 0; k < 4; ++k) {
      offset[k] = tap(first - 1 + k);
      weight[k] = cubic_convolution(t + A(1) - static_cast<A>(k), a);
    }
  }

  bool rank4_only_;
  bool align_corners_;
  GridMode mode_ = GridMode::Linear;
  GridPadding padding_ = GridPadding::Zeros;
};

class AffineGridOp : public OpKernel {
 public:
  explicit AffineGridOp(const OpInit& init) : align_corners_(init.get_int("align_corners", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const std::string who = node.label();
    const Tensor& theta = ctx.input(0);
    const std::vector<int64_t> size = index_values(node, ctx.input(1));
    const int64_t r = static_cast<int64_t>(size.size()) - 2;  // spatial dims: 2 or 3
    if ((r != 2 && r != 3) || theta.rank() != 3 || theta.shape()[0] != size[0] || theta.shape()[1] != r ||
        theta.shape()[2] != r + 1)
      fail(who +
           ": needs size [N, C, H, W] with theta [N, 2, 3], or [N, C, D, H, W] with theta [N, 3, 4]; got "
           "theta " +
           shape_str(theta.shape()) + " and " + std::to_string(size.size()) + " sizes");
    Shape out_shape = {size[0]};
    int64_t points = 1;
    for (int64_t i = 0; i < r; ++i) {
      out_shape.push_back(size[static_cast<size_t>(i + 2)]);
      points *= size[static_cast<size_t>(i + 2)];
    }
    out_shape.push_back(r);
    Tensor& y = allocate_checked(ctx, 0, theta.dtype(), out_shape);
    visit_float(theta.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      const T* th = theta.data<T>();
      T* out = y.data<T>();
      parallel_for(size[0] * points, 4096, [&](int64_t b, int64_t e) {
        A base[4];
        for (int64_t p = b; p < e; ++p) {
          // Homogeneous base point (x, y[, z], 1): x runs along the last axis.
          int64_t rest = p % points;
          for (int64_t i = r - 1; i >= 0; --i) {
            const int64_t extent = size[static_cast<size_t>(i + 2)];
            base[r - 1 - i] = base_coordinate<A>(rest % extent, extent);
            rest /= extent;
          }
          base[r] = A(1);
          const T* m = th + (p / points) * r * (r + 1);
          for (int64_t row = 0; row < r; ++row) {
            A v = A(0);
            for (int64_t k = 0; k <= r; ++k) v += static_cast<A>(load(m[row * (r + 1) + k])) * base[k];
            out[p * r + row] = store<T>(v);
          }
        }
      });
    });
  }

 private:
  // Normalised coordinate of pixel i of `extent`: the pixel centres spread over [-1, 1] (align_corners)
  // or placed at the centres of `extent` equal cells of [-1, 1].
  template <class A>
  A base_coordinate(int64_t i, int64_t extent) const {
    if (align_corners_) return extent > 1 ? A(-1) + A(2) * static_cast<A>(i) / static_cast<A>(extent - 1) : A(-1);
    return A(-1) + (A(2) * static_cast<A>(i) + A(1)) / static_cast<A>(extent);
  }
  bool align_corners_;
};

}  // namespace

MPA_OP_TRAITS("", "GridSample", {.precision = PrecisionClass::Elementwise});
MPA_REGISTER_OP("", "GridSample", GridSampleOp, 16, 20, 22);
MPA_OP_TRAITS("", "AffineGrid", {.precision = PrecisionClass::Elementwise, .host_inputs = {1}});
MPA_REGISTER_OP("", "AffineGrid", AffineGridOp, 20);

}  // namespace mpa
