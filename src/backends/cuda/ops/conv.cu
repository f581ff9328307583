// Conv on cuDNN. The geometry (attributes, auto_pad, output sizes, checks) is the CPU's
// (ops/conv_geometry.h); the data reach cuDNN in the format the node computes in, with the accumulation and
// math mode of backends/cuda/math_modes.h. cuDNN pads symmetrically: an asymmetric padding (auto_pad SAME_*,
// uneven pads) is made explicit, X copied into zeros of the padded size. The algorithm is cuDNN's heuristic choice
// (never timed, so the same shapes give the same algorithm on every run), restricted to deterministic algorithms of the
// requested math mode; the bias is written into Y first and the convolution blends onto it (beta = 1), so
// conv + bias is rounded once, as on the CPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/math_modes.h"
#include "backends/cuda/ops/movement.cuh"
#include "ops/conv_geometry.h"

namespace mpa::cuda {

namespace {

// A float32 device array in cuDNN's data type (a scratch copy for 16-bit data: exact, the values are on
// the format's grid), or float32/float64 as they are.
std::shared_ptr<std::byte[]> narrowed(const float* in, int64_t n, cudnnDataType_t type) {
  std::shared_ptr<std::byte[]> scratch = running().allocate(static_cast<size_t>(n) * 2);
  if (type == CUDNN_DATA_HALF) {
    __half* out = reinterpret_cast<__half*>(scratch.get());
    for_each_index(n, [=] __device__(int64_t i) { out[i] = __float2half_rn(in[i]); });
  } else {
    __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(scratch.get());
    for_each_index(n, [=] __device__(int64_t i) { out[i] = __float2bfloat16_rn(in[i]); });
  }
  return scratch;
}

void widen(const std::byte* in, float* out, int64_t n, cudnnDataType_t type) {
  if (type == CUDNN_DATA_HALF) {
    const __half* h = reinterpret_cast<const __half*>(in);
    for_each_index(n, [=] __device__(int64_t i) { out[i] = __half2float(h[i]); });
  } else {
    const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(in);
    for_each_index(n, [=] __device__(int64_t i) { out[i] = __bfloat162float(h[i]); });
  }
}

// y[n, m, s] = bias[m], for every image n and position s.
template <class T>
void fill_bias(const T* bias, T* y, int64_t channels, int64_t spatial, int64_t n) {
  for_each_index(n, [=] __device__(int64_t i) { y[i] = bias[(i / spatial) % channels]; });
}
void fill_bias_half(const float* bias, std::byte* y, int64_t channels, int64_t spatial, int64_t n,
                    cudnnDataType_t type) {
  if (type == CUDNN_DATA_HALF) {
    __half* h = reinterpret_cast<__half*>(y);
    for_each_index(n, [=] __device__(int64_t i) { h[i] = __float2half_rn(bias[(i / spatial) % channels]); });
  } else {
    __nv_bfloat16* h = reinterpret_cast<__nv_bfloat16*>(y);
    for_each_index(n, [=] __device__(int64_t i) { h[i] = __float2bfloat16_rn(bias[(i / spatial) % channels]); });
  }
}

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size());
  int s = 1;
  for (size_t d = dims.size(); d-- > 0;) strides[d] = s, s *= dims[d];
  return strides;
}

// X inside zeros: g.pad_begin before and g.pad_end after each spatial dim.
Tensor zero_padded(const Tensor& x, const WindowGeometry& g) {
  Shape shape = {x.dim(0), x.dim(1)};
  for (size_t d = 0; d < g.rank(); ++d) shape.push_back(g.in[d] + g.pad_begin[d] + g.pad_end[d]);
  Tensor out = running().empty(x.dtype(), shape);
  if (out.numel() == 0) return out;
  check(cudaMemsetAsync(bytes_of(out), 0, out.nbytes(), running().stream()), "padding");  // +0.0 in both types
  const std::vector<int64_t> strides = contiguous_strides(shape);
  int64_t offset = 0;
  for (size_t d = 0; d < g.rank(); ++d) offset += g.pad_begin[d] * strides[2 + d];
  const size_t size = dtype_size(x.dtype());
  copy_strided_on_device(bytes_of(out) + offset * int64_t(size), strides, bytes_of(x), contiguous_strides(x.shape()),
                         x.shape(), size);
  return out;
}

std::vector<int> as_ints(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

// What cuDNN needs to run one convolution shape: its descriptors, the algorithm and the workspace size. Made
// once per geometry and math and kept for the process (as the handle is, never destroyed): the same shapes
// get the same algorithm in every stream, sample and isolated run, and a node run costs one cuDNN call,
// not sixteen.
struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace_bytes = 0;
};

template <class Make>
const ConvPlan& plan_for(const std::vector<int64_t>& key, Make&& make) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, ConvPlan> plans;  // node-based: references stay valid
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make()).first;
  return it->second;
}

class ConvOp : public OpKernel {
 public:
  explicit ConvOp(const OpInit& init) : attrs_(WindowAttrs::read(init)), group_(init.get_int("group", 1)) {}

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    const Tensor& given = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.optional_input(2);
    if (!(given.rank() >= 3 && w.rank() == given.rank()))
      fail(label + ": X " + shape_str(given.shape()) + " and W " + shape_str(w.shape()) + " do not fit a convolution");
    if (given.dtype() != DType::Float32 && given.dtype() != DType::Float64)
      fail(label + ": Conv on " + dtype_name(given.dtype()) +
           " has no CUDA kernel (float32 and float64 only); run it with --device cpu");
    const int64_t N = given.dim(0), C = given.dim(1), M = w.dim(0);
    if (!(group_ >= 1 && C % group_ == 0 && M % group_ == 0 && w.dim(1) == C / group_))
      fail(label + ": W " + shape_str(w.shape()) + " does not fit X " + shape_str(given.shape()) + " in " +
           std::to_string(group_) + " group(s)");
    const Shape x_spatial(given.shape().begin() + 2, given.shape().end()),
        w_spatial(w.shape().begin() + 2, w.shape().end());
    WindowGeometry g = window_geometry(label, attrs_, x_spatial, w_spatial);
    Tensor padded;
    if (g.pad_begin != g.pad_end) {
      padded = zero_padded(given, g);
      for (size_t d = 0; d < g.rank(); ++d) {
        g.in[d] += g.pad_begin[d] + g.pad_end[d];
        g.pad_begin[d] = g.pad_end[d] = 0;
      }
    }
    const Tensor& x = padded.defined() ? padded : given;
    if (b && b->numel() != M)
      fail(label + ": B has " + std::to_string(b->numel()) + " elements, W has " + std::to_string(M) +
           " output channels");
    Shape y_shape = {N, M};
    y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
    Tensor y = running().empty(x.dtype(), y_shape);
    if (y.numel() == 0) return ctx.set_output(0, std::move(y));
    if (g.rank() == 1) g = g.as_2d();  // cuDNN convolves 2-D and up

    const CudaBackend& backend = running();
    const ConvMath math = conv_math(ctx.config(), x.dtype());
    const bool sixteen = math.data == CUDNN_DATA_HALF || math.data == CUDNN_DATA_BFLOAT16;
    std::vector<int> x_dims = {int(N), int(C)}, w_dims = {int(M), int(C / group_)}, y_dims = {int(N), int(M)};
    for (size_t d = 0; d < g.rank(); ++d) {
      x_dims.push_back(int(g.in[d]));
      w_dims.push_back(int(g.kernel[d]));
      y_dims.push_back(int(g.out[d]));
    }
    cudnnHandle_t handle = backend.cudnn();
    std::vector<int64_t> key = {backend.device().index, int64_t(math.data), int64_t(math.compute), int64_t(math.math),
                                group_};
    for (const auto* part : {&x_dims, &w_dims}) key.insert(key.end(), part->begin(), part->end());
    for (const auto* part : {&g.pad_begin, &g.stride, &g.dilation}) key.insert(key.end(), part->begin(), part->end());
    const ConvPlan& plan = plan_for(key, [&] {
      ConvPlan made;
      check(cudnnCreateTensorDescriptor(&made.x), "cudnnCreateTensorDescriptor");
      check(cudnnCreateTensorDescriptor(&made.y), "cudnnCreateTensorDescriptor");
      check(cudnnCreateFilterDescriptor(&made.w), "cudnnCreateFilterDescriptor");
      check(cudnnCreateConvolutionDescriptor(&made.conv), "cudnnCreateConvolutionDescriptor");
      const int nd = static_cast<int>(x_dims.size());
      check(cudnnSetTensorNdDescriptor(made.x, math.data, nd, x_dims.data(), packed_strides(x_dims).data()),
            "X descriptor");
      check(cudnnSetTensorNdDescriptor(made.y, math.data, nd, y_dims.data(), packed_strides(y_dims).data()),
            "Y descriptor");
      check(cudnnSetFilterNdDescriptor(made.w, math.data, CUDNN_TENSOR_NCHW, nd, w_dims.data()), "W descriptor");
      check(cudnnSetConvolutionNdDescriptor(made.conv, nd - 2, as_ints(g.pad_begin).data(), as_ints(g.stride).data(),
                                            as_ints(g.dilation).data(), CUDNN_CROSS_CORRELATION, math.compute),
            "convolution descriptor");
      check(cudnnSetConvolutionGroupCount(made.conv, int(group_)), "cudnnSetConvolutionGroupCount");
      check(cudnnSetConvolutionMathType(made.conv, math.math), "cudnnSetConvolutionMathType");
      made.algo = choose_algorithm(handle, made.x, made.w, made.conv, made.y, math, label);
      check(cudnnGetConvolutionForwardWorkspaceSize(handle, made.x, made.w, made.conv, made.y, made.algo,
                                                    &made.workspace_bytes),
            "cudnnGetConvolutionForwardWorkspaceSize");
      return made;
    });
    std::shared_ptr<std::byte[]> workspace = backend.allocate(plan.workspace_bytes);

    // Operands in cuDNN's data type; Y starts as the bias (or is overwritten: beta = 0).
    std::shared_ptr<std::byte[]> x16, w16, y16;
    const void* xp = x.device_raw(backend.device());
    const void* wp = w.device_raw(backend.device());
    void* yp = y.device_raw(backend.device());
    if (sixteen) {
      x16 = narrowed(device_data<float>(x), x.numel(), math.data);
      w16 = narrowed(device_data<float>(w), w.numel(), math.data);
      y16 = backend.allocate(static_cast<size_t>(y.numel()) * 2);
      xp = x16.get();
      wp = w16.get();
      yp = y16.get();
    }
    const int64_t spatial = y.numel() / (N * M);
    if (b) {
      if (sixteen)
        fill_bias_half(device_data<float>(*b), y16.get(), M, spatial, y.numel(), math.data);
      else if (x.dtype() == DType::Float64)
        fill_bias(device_data<double>(*b), device_data<double>(y), M, spatial, y.numel());
      else
        fill_bias(device_data<float>(*b), device_data<float>(y), M, spatial, y.numel());
    }
    const double one64 = 1, zero64 = 0;
    const float one32 = 1, zero32 = 0;
    const bool doubles = math.data == CUDNN_DATA_DOUBLE;
    const void* alpha = doubles ? static_cast<const void*>(&one64) : static_cast<const void*>(&one32);
    const void* beta = b ? alpha : doubles ? static_cast<const void*>(&zero64) : static_cast<const void*>(&zero32);
    check(cudnnConvolutionForward(handle, alpha, plan.x, xp, plan.w, wp, plan.conv, plan.algo, workspace.get(),
                                  plan.workspace_bytes, beta, plan.y, yp),
          "cudnnConvolutionForward");
    if (sixteen) widen(y16.get(), device_data<float>(y), y.numel(), math.data);
    ctx.set_output(0, std::move(y));
  }

 private:
  // cuDNN's heuristic ranking (no timing runs), first deterministic algorithm of the requested math mode.
  static cudnnConvolutionFwdAlgo_t choose_algorithm(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                    cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                                                    cudnnTensorDescriptor_t y, const ConvMath& math,
                                                    const std::string& label) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    check(cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < found; ++i) {
      const bool math_ok = math.math != CUDNN_FMA_MATH || perf[i].mathType == CUDNN_FMA_MATH;
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC && math_ok)
        return perf[i].algo;
    }
    fail(label + ": cuDNN offers no deterministic algorithm for this convolution (" + conv_math_name(math) + ")");
  }

  WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "Conv", ConvOp, 1, 11, 22);

}  // namespace mpa::cuda
