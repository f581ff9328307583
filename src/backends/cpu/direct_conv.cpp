#include "backends/cpu/direct_conv.h"

#ifdef MPA_HAVE_DNNL
#include <omp.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/parallel.h"
#endif

namespace mpa::cpu {

#ifdef MPA_HAVE_DNNL

namespace {

using dnnl::memory;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Per-thread buffers that keep their capacity between calls (a piece's blocked input and output, oneDNN's
// scratchpad): concurrent pieces each use their own thread's, and a run does not re-fault megabytes per node.
enum Buffer { kBlockedSrc, kBlockedDst, kScratchpad, kBuffers };
void* thread_buffer(Buffer which, size_t bytes) {
  thread_local std::vector<char> buffers[kBuffers];
  std::vector<char>& b = buffers[which];
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

// oneDNN (built on OpenMP) runs a primitive on as many OpenMP threads as the creating thread allowed. Every
// piece runs on one thread of our pool instead: an OpenMP team beside the pool spun on the cores the pool's
// next loop needed (ResNet-50 3-4x slower on 2 busy cores), as gemm.cpp found for the BLAS.
class OneOmpThread {
 public:
  OneOmpThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOmpThread() { omp_set_num_threads(saved_); }
  OneOmpThread(const OneOmpThread&) = delete;
  OneOmpThread& operator=(const OneOmpThread&) = delete;

 private:
  int saved_;
};

// A convolution runs as pieces, each a oneDNN convolution of one image on one thread, handed out by the pool:
// bands of output rows where the input is the larger operand (each band reads its rows and all the weights),
// blocks of output channels where the weights are (each block reads the whole input and its weights). The
// pieces depend on the shape only; oneDNN's result for an output does not depend on them either (its sums run
// over input channels and taps in the same order for any band or block: bit for bit on ResNet-50's shapes and
// odd ones, tests/unit/test_direct_conv.cpp), so results are the same for any --threads.
constexpr int64_t kMaxPieces = 4;
// Below this many multiply-adds an image is one piece: a piece costs a few microseconds of set-up.
constexpr double kSplitWork = 2.0 * 1024 * 1024;
// Channel blocks of multiples of oneDNN's 16-channel blocks.
constexpr int64_t kChannelAlign = 16;

struct Piece {
  int64_t image = 0;
  int64_t out_row = 0, out_rows = 0;    // output rows [out_row, out_row + out_rows)
  int64_t in_row = 0, in_rows = 0;      // the input rows they read
  int64_t pad_top = 0, pad_bottom = 0;  // and the padding rows around those
  int64_t channel = 0, channels = 0;    // output channels [channel, channel + channels)
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<Piece> pieces_of(const Conv2dShape& s) {
  const int64_t filter = s.in_channels * s.kernel[0] * s.kernel[1];
  const double work = static_cast<double>(s.out_channels) * s.out[0] * s.out[1] * filter;
  const int64_t parts = work < kSplitWork || s.batch >= kMaxPieces ? 1 : kMaxPieces / s.batch;
  const bool by_channels = s.out_channels * filter > s.in_channels * s.in[0] * s.in[1];
  const int64_t channel_step =
      by_channels ? std::min(s.out_channels, ceil_div(ceil_div(s.out_channels, parts), kChannelAlign) * kChannelAlign)
                  : s.out_channels;
  const int64_t row_step = by_channels ? s.out[0] : ceil_div(s.out[0], parts);
  const int64_t reach = (s.kernel[0] - 1) * s.dilation[0] + 1;  // input rows one output row's window spans
  std::vector<Piece> pieces;
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t row = 0; row < s.out[0]; row += row_step)
      for (int64_t channel = 0; channel < s.out_channels; channel += channel_step) {
        Piece p{.image = n,
                .out_row = row,
                .out_rows = std::min(row_step, s.out[0] - row),
                .channel = channel,
                .channels = std::min(channel_step, s.out_channels - channel)};
        const int64_t first = row * s.stride[0] - s.pad_begin[0];  // may lie in the padding
        const int64_t end = (row + p.out_rows - 1) * s.stride[0] - s.pad_begin[0] + reach;
        p.in_row = std::clamp<int64_t>(first, 0, s.in[0]);
        p.in_rows = std::clamp<int64_t>(end, 0, s.in[0]) - p.in_row;
        p.pad_top = p.in_row - first;
        p.pad_bottom = end - std::clamp<int64_t>(end, 0, s.in[0]);
        pieces.push_back(p);
      }
  return pieces;
}

// What a piece's convolution is made for: the node's geometry, the input's and output's sizes (their NCHW
// strides) and the piece's rows, padding and channels.
using PlanKey = std::array<int64_t, 20>;
PlanKey plan_key(const Conv2dShape& s, const Piece& p, bool bias) {
  return {s.in_channels, s.in[0],     s.in[1],      s.out_channels, s.out[0],      s.out[1],       s.kernel[0],
          s.kernel[1],   s.stride[0], s.stride[1],  s.dilation[0],  s.dilation[1], s.pad_begin[1], s.pad_end[1],
          p.in_rows,     p.pad_top,   p.pad_bottom, p.out_rows,     p.channels,    int64_t{bias}};
}

struct Plan {
  dnnl::convolution_forward conv;
  memory::desc src_plain, src, dst_plain, dst, bias, weights, scratchpad;  // plain: strided NCHW views
  dnnl::reorder to_src, from_dst;
};

}  // namespace

struct DirectConv::State {
  std::mutex mutex;
  std::map<PlanKey, std::shared_ptr<const Plan>> plans;  // null: oneDNN has no kernel for it
  // Weights in a primitive's layout, by (weights address, format, first channel, channels); one per layout.
  std::map<std::tuple<const float*, int, int64_t, int64_t>, std::vector<memory>> weights;

  std::shared_ptr<const Plan> plan_for(const Conv2dShape& s, const Piece& p, bool bias) {
    auto found = plans.find(plan_key(s, p, bias));
    if (found != plans.end()) return found->second;
    std::shared_ptr<Plan> made = std::make_shared<Plan>();
    const auto f32 = memory::data_type::f32;
    using tag = memory::format_tag;
    const memory::dims src{1, s.in_channels, p.in_rows, s.in[1]}, dst{1, p.channels, p.out_rows, s.out[1]},
        weights{p.channels, s.in_channels, s.kernel[0], s.kernel[1]};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per thread: concurrent pieces never share one
    attr.set_fpmath_mode(dnnl::fpmath_mode::strict);        // fp32 products and sums, never bf16 or f16
    try {
      // `any` layouts: oneDNN's direct kernels pick their own (brgconv on AVX-512: NHWC activations, blocked
      // weights; older jit kernels nChw16c); given NCHW it would run im2col + its sgemm, the caller's own path.
      const dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, memory::desc(src, f32, tag::any),
          memory::desc(weights, f32, tag::any), bias ? memory::desc({p.channels}, f32, tag::a) : memory::desc(),
          memory::desc(dst, f32, tag::any), {s.stride[0], s.stride[1]}, {s.dilation[0] - 1, s.dilation[1] - 1},
          {p.pad_top, s.pad_begin[1]}, {p.pad_bottom, s.pad_end[1]});
      const dnnl::convolution_forward::primitive_desc pd(desc, attr, cpu_engine());
      made->conv = dnnl::convolution_forward(pd);
      made->src_plain = memory::desc(src, f32, {s.in_channels * s.in[0] * s.in[1], s.in[0] * s.in[1], s.in[1], 1});
      made->dst_plain =
          memory::desc(dst, f32, {s.out_channels * s.out[0] * s.out[1], s.out[0] * s.out[1], s.out[1], 1});
      made->src = pd.src_desc();
      made->dst = pd.dst_desc();
      made->bias = pd.bias_desc();
      made->weights = pd.weights_desc();
      made->scratchpad = pd.scratchpad_desc();
      made->to_src =
          dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), made->src_plain, cpu_engine(), made->src));
      made->from_dst =
          dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), made->dst, cpu_engine(), made->dst_plain));
    } catch (const dnnl::error&) {
      made.reset();  // no direct kernel for this shape on this CPU: the caller's path, now and later
    }
    return plans.emplace(plan_key(s, p, bias), made).first->second;
  }

  // Channels [p.channel, +p.channels) of w in `plan`'s layout: reordered on first use, then kept.
  const memory& weights_for(const float* w, int format, const Conv2dShape& s, const Piece& p, const Plan& plan) {
    std::vector<memory>& layouts = weights[{w, format, p.channel, p.channels}];
    for (const memory& m : layouts)
      if (m.get_desc() == plan.weights) return m;
    const int64_t filter = s.in_channels * s.kernel[0] * s.kernel[1];
    memory given(
        {{p.channels, s.in_channels, s.kernel[0], s.kernel[1]}, memory::data_type::f32, memory::format_tag::oihw},
        cpu_engine(), const_cast<float*>(w + p.channel * filter));
    memory kept(plan.weights, cpu_engine());
    dnnl::stream stream(cpu_engine());
    dnnl::reorder(given, kept).execute(stream, given, kept);
    stream.wait();
    layouts.push_back(kept);
    return layouts.back();
  }
};

DirectConv::DirectConv() : state_(std::make_unique<State>()) {}
DirectConv::~DirectConv() = default;

bool direct_conv_available() { return true; }

bool DirectConv::run(const Conv2dShape& s, const float* x, const float* w, int weights_format, const float* bias,
                     float* y) const {
  const std::vector<Piece> pieces = pieces_of(s);
  struct Task {
    const Piece* piece;
    std::shared_ptr<const Plan> plan;
    memory weights;
  };
  std::vector<Task> tasks;
  tasks.reserve(pieces.size());
  {
    const OneOmpThread one;  // primitives made for one thread
    std::lock_guard<std::mutex> lock(state_->mutex);
    try {
      for (const Piece& p : pieces) {
        std::shared_ptr<const Plan> plan = state_->plan_for(s, p, bias != nullptr);
        if (!plan) return false;
        tasks.push_back({&p, plan, state_->weights_for(w, weights_format, s, p, *plan)});
      }
    } catch (const dnnl::error& e) {
      fail(std::string("oneDNN convolution set-up failed: ") + e.what() + " (status " + std::to_string(e.status) + ")");
    }
  }
  parallel_for(static_cast<int64_t>(tasks.size()), 1, [&](int64_t begin, int64_t end) {
    const OneOmpThread one;
    const dnnl::engine& engine = cpu_engine();
    thread_local dnnl::stream stream(engine);
    for (int64_t t = begin; t < end; ++t) {
      const Piece& p = *tasks[size_t(t)].piece;
      const Plan& plan = *tasks[size_t(t)].plan;
      try {
        memory x_rows(plan.src_plain, engine,
                      const_cast<float*>(x + (p.image * s.in_channels * s.in[0] + p.in_row) * s.in[1]));
        memory y_rows(plan.dst_plain, engine,
                      y + ((p.image * s.out_channels + p.channel) * s.out[0] + p.out_row) * s.out[1]);
        memory src(plan.src, engine, thread_buffer(kBlockedSrc, plan.src.get_size()));
        memory dst(plan.dst, engine, thread_buffer(kBlockedDst, plan.dst.get_size()));
        memory scratchpad(plan.scratchpad, engine, thread_buffer(kScratchpad, plan.scratchpad.get_size()));
        plan.to_src.execute(stream, x_rows, src);
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, tasks[size_t(t)].weights},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_SCRATCHPAD, scratchpad}};
        if (bias) args.emplace(DNNL_ARG_BIAS, memory(plan.bias, engine, const_cast<float*>(bias + p.channel)));
        plan.conv.execute(stream, args);
        plan.from_dst.execute(stream, dst, y_rows);
        stream.wait();
      } catch (const dnnl::error& e) {
        fail(std::string("oneDNN convolution failed: ") + e.what() + " (status " + std::to_string(e.status) + ")");
      }
    }
  });
  return true;
}

#else

struct DirectConv::State {};
DirectConv::DirectConv() = default;
DirectConv::~DirectConv() = default;
bool direct_conv_available() { return false; }
bool DirectConv::run(const Conv2dShape&, const float*, const float*, int, const float*, float*) const { return false; }

#endif

}  // namespace mpa::cpu
