// Pools: MaxPool (with Indices), AveragePool, LpPool over 1-D..8-D windows, and the global pools.
// Windows are precomputed once per spatial dimension (which input indices each output reads, and how
// many positions the padded window covers), so N-d windows are products of per-dim lists; every (N, C)
// plane is independent and the planes run in parallel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/compiler.h"
#include "ops/compute_buffer.h"
#include "ops/conv_geometry.h"
#include "ops/op.h"

namespace mpa {

namespace {

enum class PoolKind { Max, Average, Lp };

// For one spatial dim and output index o: the window reads kernel taps k in [lo, hi) (inside the input) at
// input index first + k * dilation; padded counts the taps inside the padded input (the
// count_include_pad divisor).
struct DimWindow {
  int64_t first, lo, hi, padded;
};

std::vector<std::vector<DimWindow>> build_windows(const WindowGeometry& g) {
  std::vector<std::vector<DimWindow>> dims(g.rank());
  for (size_t d = 0; d < g.rank(); ++d) {
    const int64_t dil = g.dilation[d];
    for (int64_t o = 0; o < g.out[d]; ++o) {
      const int64_t first = o * g.stride[d] - g.pad_begin[d];
      // Taps with 0 <= first + k*dil < limit, k in [0, kernel).
      auto upto = [&](int64_t limit) {
        return limit - 1 - first < 0 ? 0 : std::min(g.kernel[d], (limit - 1 - first) / dil + 1);
      };
      const int64_t lo = first >= 0 ? 0 : (-first + dil - 1) / dil;
      const int64_t hi = std::max(lo, upto(g.in[d]));
      dims[d].push_back({first, lo, hi, upto(g.in[d] + g.pad_end[d])});
    }
  }
  return dims;
}

template <PoolKind kind, class T>
void pool_planes(const T* x, T* y, int64_t* indices, int64_t planes, const WindowGeometry& g, bool count_include_pad,
                 bool column_major, double p) {
  using C = std::conditional_t<std::is_integral_v<T>, T, compute_t<T>>;
  const auto dims = build_windows(g);
  const size_t nd = g.rank(), last = nd - 1;
  const int64_t in_size = g.in_size(), out_size = g.out_size(), dil_last = g.dilation[last];
  // Flat-index multipliers of the input, row-major (data) and in the Indices storage order.
  std::vector<int64_t> row_stride(nd), index_stride(nd);
  for (size_t d = nd, s = 1; d-- > 0;) row_stride[d] = static_cast<int64_t>(s), s *= static_cast<size_t>(g.in[d]);
  for (size_t d = 0, s = 1; d < nd; ++d) index_stride[d] = static_cast<int64_t>(s), s *= static_cast<size_t>(g.in[d]);
  if (!column_major) index_stride = row_stride;
  // Offsets of every tap of a window that lies wholly inside the input (most windows): those windows
  // read xp[base + tap_offset[t]] without per-dimension bounds.
  const int64_t ksize = g.kernel_size();
  std::vector<int64_t> tap_offset(static_cast<size_t>(ksize)), tap_index(static_cast<size_t>(ksize));
  for (int64_t t = 0; t < ksize; ++t) {
    int64_t rest = t, off = 0, at = 0;
    for (size_t d = nd; d-- > 0;) {
      const int64_t kd = rest % g.kernel[d];
      rest /= g.kernel[d];
      off += kd * g.dilation[d] * row_stride[d];
      at += kd * g.dilation[d] * index_stride[d];
    }
    tap_offset[static_cast<size_t>(t)] = off;
    tap_index[static_cast<size_t>(t)] = at;
  }
  parallel_for(
      planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(out_size, 1)), [&](int64_t begin, int64_t end) {
        std::vector<int64_t> o(nd), k(nd);
        std::vector<const DimWindow*> win(nd);
        for (int64_t plane = begin; plane < end; ++plane) {
          const T* xp = x + plane * in_size;
          std::fill(o.begin(), o.end(), 0);
          for (int64_t op = 0; op < out_size; ++op) {
            int64_t valid = 1, padded = 1, base = 0, base_index = 0;
            for (size_t d = 0; d < nd; ++d) {
              win[d] = &dims[d][static_cast<size_t>(o[d])];
              k[d] = win[d]->lo;
              valid *= win[d]->hi - win[d]->lo;
              padded *= win[d]->padded;
              base += win[d]->first * row_stride[d];
              base_index += win[d]->first * index_stride[d];
            }
            C best = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                          : std::numeric_limits<C>::lowest();
            int64_t best_at = -1;
            C sum = 0;
            const int64_t lo = win[last]->lo, hi = win[last]->hi;
            const bool interior = valid == ksize;
            if (interior) {
              const T* xb = xp + base;
              for (int64_t t = 0; t < ksize; ++t) {
                const C v = load(xb[tap_offset[static_cast<size_t>(t)]]);
                if constexpr (kind == PoolKind::Max) {
                  if (v > best || best_at < 0) best = v, best_at = base_index + tap_index[static_cast<size_t>(t)];
                } else if constexpr (kind == PoolKind::Average) {
                  sum += v;
                } else {
                  sum += static_cast<C>(std::pow(std::abs(static_cast<double>(v)), p));
                }
              }
            }
            while (!interior &&
                   valid > 0) {  // one row of the window per pass: outer taps fixed, last dim in a tight loop
              int64_t off = 0;
              for (size_t d = 0; d < last; ++d) off += (win[d]->first + k[d] * g.dilation[d]) * row_stride[d];
              const T* row = xp + off + win[last]->first;
              if constexpr (kind == PoolKind::Max) {
                for (int64_t t = lo; t < hi; ++t) {
                  const C v = load(row[t * dil_last]);
                  if (v > best || best_at < 0) {
                    best = v;
                    best_at = t;
                    if (indices) {  // position in the Indices storage order
                      best_at = (win[last]->first + t * dil_last) * index_stride[last];
                      for (size_t d = 0; d < last; ++d)
                        best_at += (win[d]->first + k[d] * g.dilation[d]) * index_stride[d];
                    }
                  }
                }
              } else if constexpr (kind == PoolKind::Average) {
                for (int64_t t = lo; t < hi; ++t) sum += load(row[t * dil_last]);
              } else {
                for (int64_t t = lo; t < hi; ++t)
                  sum += static_cast<C>(std::pow(std::abs(static_cast<double>(load(row[t * dil_last]))), p));
              }
              size_t d = last;
              while (d-- > 0) {
                if (++k[d] < win[d]->hi) break;
                k[d] = win[d]->lo;
              }
              if (d == static_cast<size_t>(-1)) break;  // every outer tap visited
            }
            C result;
            if constexpr (kind == PoolKind::Max) {
              result = best;
              if (indices) indices[plane * out_size + op] = best_at < 0 ? -1 : plane * in_size + best_at;
            } else if constexpr (kind == PoolKind::Average) {
              result = static_cast<C>(sum / static_cast<C>(count_include_pad ? padded : valid));
            } else {
              result = static_cast<C>(std::pow(static_cast<double>(sum), 1.0 / p));
            }
            y[plane * out_size + op] = store<T>(result);
            for (size_t d = nd; d-- > 0;) {
              if (++o[d] < g.out[d]) break;
              o[d] = 0;
            }
          }
        }
      });
}

// 2-D max pooling of finite float planes without Indices as two 1-D passes, along rows then columns:
// kh + kw reads per output instead of kh * kw, with inner loops over contiguous outputs (vectorised for
// stride 1). Max over finite values does not depend on order, so the result is the window loop's; with
// NaN the window loop's result depends on which tap comes first, so callers check finiteness. Here planes
// [begin, end), with `rows` room for one plane's row maxima (H x OW).
MPA_VECTOR_CLONES void max_pool_planes_2d(const float* x, float* y, int64_t begin, int64_t end, const WindowGeometry& g,
                                          const std::vector<DimWindow>& row_windows, float* rows) {
  const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  const int64_t sw = g.stride[1], dw = g.dilation[1], dh = g.dilation[0], pad_left = g.pad_begin[1];
  constexpr float lowest = -std::numeric_limits<float>::infinity();
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* xp = x + plane * H * W;
    std::fill(rows, rows + H * OW, lowest);
    for (int64_t kx = 0; kx < g.kernel[1]; ++kx) {
      // Outputs whose tap kx lands inside the row: 0 <= ow * sw - pad_left + kx * dw < W.
      const int64_t shift = kx * dw - pad_left;
      const int64_t ow_lo = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
      const int64_t ow_hi = std::min(OW, W - 1 - shift < 0 ? int64_t{0} : (W - 1 - shift) / sw + 1);
      for (int64_t h = 0; h < H; ++h) {
        const float* in = xp + h * W + shift;
        float* r = rows + h * OW;
        for (int64_t ow = ow_lo; ow < ow_hi; ++ow) r[ow] = std::max(r[ow], in[ow * sw]);
      }
    }
    float* yp = y + plane * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const DimWindow& w = row_windows[static_cast<size_t>(oh)];
      float* out = yp + oh * OW;
      std::fill(out, out + OW, lowest);
      for (int64_t t = w.lo; t < w.hi; ++t) {
        const float* r = rows + (w.first + t * dh) * OW;
        for (int64_t ow = 0; ow < OW; ++ow) out[ow] = std::max(out[ow], r[ow]);
      }
    }
  }
}

void separable_max_pool_2d(const float* x, float* y, int64_t planes, const WindowGeometry& g) {
  const auto dims = build_windows(g);
  const int64_t rows = g.in[0] * g.out[1], out_size = g.out[0] * g.out[1];
  parallel_for(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(out_size, 1)), [&](int64_t begin, int64_t end) {
    std::vector<float> row_maxima(static_cast<size_t>(rows));
    max_pool_planes_2d(x, y, begin, end, g, dims[0], row_maxima.data());
  });
}

bool all_finite(const float* x, int64_t n) {
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
  }
  return bad == 0;
}

class PoolOp : public OpKernel {
 public:
  PoolOp(const OpInit& init, PoolKind kind)
      : kind_(kind),
        attrs_(WindowAttrs::read(init)),
        count_include_pad_(init.get_int("count_include_pad", 0) != 0),
        column_major_(init.get_int("storage_order", 0) != 0) {
    if (kind == PoolKind::Lp) {
      const Attribute* a = init.node().attribute("p");
      p_ = !a ? 2.0 : a->kind == Attribute::Kind::Float ? a->f : static_cast<double>(a->i);
    }
    if (!(!attrs_.kernel_shape.empty())) fail(init.node().label() + ": required attribute 'kernel_shape' is missing");
  }

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& x = ctx.input(0);
    if (!(x.rank() >= 3)) fail(label + ": input X has shape " + shape_str(x.shape()) + ", needs N x C x spatial");
    const Shape in_spatial(x.shape().begin() + 2, x.shape().end());
    const WindowGeometry g = window_geometry(label, attrs_, in_spatial, attrs_.kernel_shape);
    Shape out_shape{x.dim(0), x.dim(1)};
    out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
    Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    int64_t* indices = nullptr;
    if (kind_ == PoolKind::Max && ctx.output_requested(1))
      indices = ctx.allocate_output(1, DType::Int64, out_shape).data<int64_t>();
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const int64_t planes = x.dim(0) * x.dim(1);
      switch (kind_) {
        case PoolKind::Max: return pool_planes<PoolKind::Max>(px, py, indices, planes, g, false, column_major_, p_);
        case PoolKind::Average:
          return pool_planes<PoolKind::Average>(px, py, nullptr, planes, g, count_include_pad_, false, p_);
        case PoolKind::Lp: return pool_planes<PoolKind::Lp>(px, py, nullptr, planes, g, false, false, p_);
      }
    };
    if (kind_ == PoolKind::Max && !indices && g.rank() == 2 && x.dtype() == DType::Float32 &&
        all_finite(x.data<float>(), x.numel()))
      return separable_max_pool_2d(x.data<float>(), y.data<float>(), x.dim(0) * x.dim(1), g);
    if (kind_ == PoolKind::Max && x.dtype() == DType::Int8) return run(TypeTag<int8_t>{});
    if (kind_ == PoolKind::Max && x.dtype() == DType::UInt8) return run(TypeTag<uint8_t>{});
    visit_float(x.dtype(), run);
  }

 private:
  PoolKind kind_;
  WindowAttrs attrs_;
  bool count_include_pad_, column_major_;
  double p_ = 2.0;
};

struct MaxPoolOp : PoolOp {
  explicit MaxPoolOp(const OpInit& init) : PoolOp(init, PoolKind::Max) {}
};
struct AveragePoolOp : PoolOp {
  explicit AveragePoolOp(const OpInit& init) : PoolOp(init, PoolKind::Average) {}
};
struct LpPoolOp : PoolOp {
  explicit LpPoolOp(const OpInit& init) : PoolOp(init, PoolKind::Lp) {}
};

// GlobalAveragePool / GlobalMaxPool: one reduction per (N, C) plane.
class GlobalPoolOp : public OpKernel {
 public:
  GlobalPoolOp(const OpInit&, bool max) : max_(max) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (!(x.rank() >= 2))
      fail(ctx.node().label() + ": input X has shape " + shape_str(x.shape()) + ", needs N x C x ...");
    Shape out_shape = x.shape();
    std::fill(out_shape.begin() + 2, out_shape.end(), 1);
    Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    const int64_t planes = x.dim(0) * x.dim(1), size = planes ? x.numel() / planes : 0;
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      parallel_for(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(size, 1)), [&](int64_t b, int64_t e) {
        for (int64_t plane = b; plane < e; ++plane) {
          const T* p = xp + plane * size;
          C acc = max_ ? -std::numeric_limits<C>::infinity() : C(0);
          for (int64_t i = 0; i < size; ++i) {
            const C v = load(p[i]);
            if (max_)
              acc = (v > acc || std::isnan(v)) ? v : acc;
            else
              acc += v;
          }
          yp[plane] = store<T>(max_ ? acc : static_cast<C>(acc / static_cast<C>(size)));
        }
      });
    });
  }

 private:
  bool max_;
};

struct GlobalAveragePoolOp : GlobalPoolOp {
  explicit GlobalAveragePoolOp(const OpInit& init) : GlobalPoolOp(init, false) {}
};
struct GlobalMaxPoolOp : GlobalPoolOp {
  explicit GlobalMaxPoolOp(const OpInit& init) : GlobalPoolOp(init, true) {}
};

}  // namespace

MPA_OP_TRAITS("", "MaxPool", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "MaxPool", MaxPoolOp, 1, 8, 10, 11, 12, 22);
MPA_OP_TRAITS("", "AveragePool", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "AveragePool", AveragePoolOp, 1, 7, 10, 11, 19, 22);
MPA_OP_TRAITS("", "LpPool", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "LpPool", LpPoolOp, 1, 2, 11, 18, 22);
MPA_OP_TRAITS("", "GlobalAveragePool", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32});
MPA_REGISTER_OP("", "GlobalAveragePool", GlobalAveragePoolOp, 1, 22);
MPA_OP_TRAITS("", "GlobalMaxPool", {.rounding_commutes = true, .precision = PrecisionClass::Exact});
MPA_REGISTER_OP("", "GlobalMaxPool", GlobalMaxPoolOp, 1, 22);

}  // namespace mpa
