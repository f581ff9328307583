// What the CUDA backend's call patterns cost the host per node run, steady state, one stream (bench/README.md,
// "CUDA audits"): the bare runtime calls, the probe copy-back, normalisation constants, and cuDNN's legacy
// convolution on ResNet-50 shapes with descriptors made per call (as before f18939a) or kept (as now), Forward
// alone, and a CUDA graph replay of the same calls (the GPU's own time). Built where nvcc is
// (build/mpaudit_cuda_host_cost); on an H200 it runs in about 5 s: docs/cuda-validation-h200/host-cost.log.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                              \
  do {                                                                     \
    auto s_ = (x);                                                         \
    if (s_ != 0) { std::printf("%s failed: %d (line %d)\n", #x, int(s_), __LINE__); std::exit(1); } \
  } while (0)

static double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

__global__ void empty_kernel(float* p) {
  if (p && threadIdx.x == 1234567) p[0] = 0;
}

struct Conv {
  int n, c, h, w, m, k, stride, pad;
};

int main() {
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemPool_t pool;
  CK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t keep = UINT64_MAX;
  CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  CK(cudnnSetStream(h, stream));
  const int iters = 2000;
  auto report = [&](const char* what, double t0, int n) {
    CK(cudaStreamSynchronize(stream));
    std::printf("%-62s %8.2f us/iter\n", what, (now_us() - t0) / n);
  };

  // 1. Bare runtime calls.
  double t0 = now_us();
  for (int i = 0; i < iters; ++i) empty_kernel<<<1, 256, 0, stream>>>(nullptr);
  report("kernel launch (empty, async)", t0, iters);
  t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    void* p;
    CK(cudaMallocAsync(&p, 1 << 20, stream));
    CK(cudaFreeAsync(p, stream));
  }
  report("cudaMallocAsync + cudaFreeAsync (1 MiB, pool hit)", t0, iters);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(e0, stream));
    CK(cudaEventRecord(e1, stream));
  }
  report("2 x cudaEventRecord (CudaBackend::run before, untimed)", t0, iters);
  t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    empty_kernel<<<1, 256, 0, stream>>>(nullptr);
    CK(cudaStreamSynchronize(stream));
  }
  report("launch + cudaStreamSynchronize", t0, iters);

  // 2. Probe copy-back: 5 pageable D2H + sync (probes.cu) vs 1 pinned D2H + sync.
  const size_t chunk_bytes[5] = {32 * 4, 688 * 4, 48 * 4, 96 * 12, 688 * 12};
  size_t total = 0;
  for (size_t b : chunk_bytes) total += b;
  void* dbuf;
  CK(cudaMalloc(&dbuf, total));
  std::vector<std::vector<char>> pageable(5);
  t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    empty_kernel<<<1, 256, 0, stream>>>(nullptr);
    size_t at = 0;
    for (int j = 0; j < 5; ++j) {
      pageable[j].resize(chunk_bytes[j]);
      CK(cudaMemcpyAsync(pageable[j].data(), static_cast<char*>(dbuf) + at, chunk_bytes[j], cudaMemcpyDeviceToHost,
                         stream));
      at += chunk_bytes[j];
    }
    CK(cudaStreamSynchronize(stream));
  }
  report("probe copy-back before: launch + 5 pageable D2H + sync", t0, iters);
  void* pinned;
  CK(cudaMallocHost(&pinned, total));
  t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    empty_kernel<<<1, 256, 0, stream>>>(nullptr);
    CK(cudaMemcpyAsync(pinned, dbuf, total, cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
  }
  report("probe copy-back now: launch + 1 pinned D2H + sync", t0, iters);

  // 3. BN constants (normalization.cu): 4 x (alloc + pageable H2D of C floats + free) vs nothing.
  std::vector<float> consts(2048, 1.f);
  t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    void* p[4];
    for (int j = 0; j < 4; ++j) {
      CK(cudaMallocAsync(&p[j], consts.size() * 4, stream));
      CK(cudaMemcpyAsync(p[j], consts.data(), consts.size() * 4, cudaMemcpyHostToDevice, stream));
    }
    empty_kernel<<<1, 256, 0, stream>>>(nullptr);
    for (int j = 0; j < 4; ++j) CK(cudaFreeAsync(p[j], stream));
  }
  report("BN constants before: 4 x (alloc + H2D 8 KB + free) + launch", t0, iters);
  // Isolated-run host inputs (session.cpp rerun -> download): D2H pageable + sync, 4 per BN.
  t0 = now_us();
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 4; ++j) {
      CK(cudaMemcpyAsync(consts.data(), dbuf, 2048, cudaMemcpyDeviceToHost, stream));
      CK(cudaStreamSynchronize(stream));
    }
  report("BN isolated run before: 4 x (pageable D2H + sync)", t0, iters);

  // 4. cuDNN legacy convolution, ResNet-50 shapes, fp16 data / fp32 compute and fp32 FMA.
  const Conv convs[] = {{1, 256, 14, 14, 256, 3, 1, 1}, {1, 1024, 14, 14, 256, 1, 1, 0}, {1, 512, 7, 7, 512, 3, 1, 1}};
  for (const Conv& cv : convs)
    for (int half = 0; half < 2; ++half) {
      const cudnnDataType_t data = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
      const cudnnMathType_t math = half ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
      const int oh = (cv.h + 2 * cv.pad - cv.k) / cv.stride + 1, ow = (cv.w + 2 * cv.pad - cv.k) / cv.stride + 1;
      int xd[4] = {cv.n, cv.c, cv.h, cv.w}, wd[4] = {cv.m, cv.c, cv.k, cv.k}, yd[4] = {cv.n, cv.m, oh, ow};
      int xs[4] = {cv.c * cv.h * cv.w, cv.h * cv.w, cv.w, 1}, ys[4] = {cv.m * oh * ow, oh * ow, ow, 1};
      int pads[2] = {cv.pad, cv.pad}, strides[2] = {cv.stride, cv.stride}, dil[2] = {1, 1};
      const size_t es = half ? 2 : 4;
      void *x, *w, *y;
      CK(cudaMalloc(&x, size_t(cv.n) * cv.c * cv.h * cv.w * es));
      CK(cudaMalloc(&w, size_t(cv.m) * cv.c * cv.k * cv.k * es));
      CK(cudaMalloc(&y, size_t(cv.n) * cv.m * oh * ow * es));
      cudnnTensorDescriptor_t xdsc, ydsc;
      cudnnFilterDescriptor_t wdsc;
      cudnnConvolutionDescriptor_t cdsc;
      auto make = [&] {
        CK(cudnnCreateTensorDescriptor(&xdsc));
        CK(cudnnCreateTensorDescriptor(&ydsc));
        CK(cudnnCreateFilterDescriptor(&wdsc));
        CK(cudnnCreateConvolutionDescriptor(&cdsc));
        CK(cudnnSetTensorNdDescriptor(xdsc, data, 4, xd, xs));
        CK(cudnnSetTensorNdDescriptor(ydsc, data, 4, yd, ys));
        CK(cudnnSetFilterNdDescriptor(wdsc, data, CUDNN_TENSOR_NCHW, 4, wd));
        CK(cudnnSetConvolutionNdDescriptor(cdsc, 2, pads, strides, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        CK(cudnnSetConvolutionGroupCount(cdsc, 1));
        CK(cudnnSetConvolutionMathType(cdsc, math));
      };
      auto destroy = [&] {
        cudnnDestroyTensorDescriptor(xdsc);
        cudnnDestroyTensorDescriptor(ydsc);
        cudnnDestroyFilterDescriptor(wdsc);
        cudnnDestroyConvolutionDescriptor(cdsc);
      };
      make();
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int found = 0;
      CK(cudnnGetConvolutionForwardAlgorithm_v7(h, xdsc, wdsc, cdsc, ydsc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
      cudnnConvolutionFwdAlgo_t algo = perf[0].algo;
      for (int i = 0; i < found; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
            (math != CUDNN_FMA_MATH || perf[i].mathType == CUDNN_FMA_MATH)) {
          algo = perf[i].algo;
          break;
        }
      size_t ws_bytes = 0;
      CK(cudnnGetConvolutionForwardWorkspaceSize(h, xdsc, wdsc, cdsc, ydsc, algo, &ws_bytes));
      void* ws = nullptr;
      if (ws_bytes) CK(cudaMalloc(&ws, ws_bytes));
      const float one = 1, zero = 0;
      for (int i = 0; i < 20; ++i)  // warm-up: per-shape set-up and lazy module loading
        CK(cudnnConvolutionForward(h, &one, xdsc, x, wdsc, w, cdsc, algo, ws, ws_bytes, &zero, ydsc, y));
      CK(cudaStreamSynchronize(stream));
      destroy();
      char label[160];
      const int n = 500;
      t0 = now_us();
      for (int i = 0; i < n; ++i) {  // conv.cu before f18939a
        make();
        size_t b = 0;
        CK(cudnnGetConvolutionForwardWorkspaceSize(h, xdsc, wdsc, cdsc, ydsc, algo, &b));
        void* tmp = nullptr;
        if (b) CK(cudaMallocAsync(&tmp, b, stream));
        CK(cudnnConvolutionForward(h, &one, xdsc, x, wdsc, w, cdsc, algo, tmp, b, &zero, ydsc, y));
        if (tmp) CK(cudaFreeAsync(tmp, stream));
        destroy();
      }
      std::snprintf(label, sizeof label, "conv %dx%dx%d k%d %s algo %d: before (descriptors per call)", cv.c, cv.h,
                    cv.w, cv.k, half ? "fp16" : "fp32", int(algo));
      report(label, t0, n);
      make();
      t0 = now_us();
      for (int i = 0; i < n; ++i) {  // descriptors cached, workspace size asked
        size_t b = 0;
        CK(cudnnGetConvolutionForwardWorkspaceSize(h, xdsc, wdsc, cdsc, ydsc, algo, &b));
        CK(cudnnConvolutionForward(h, &one, xdsc, x, wdsc, w, cdsc, algo, ws, ws_bytes, &zero, ydsc, y));
      }
      report("   descriptors cached, GetWorkspaceSize + Forward", t0, n);
      t0 = now_us();
      for (int i = 0; i < n; ++i)
        CK(cudnnConvolutionForward(h, &one, xdsc, x, wdsc, w, cdsc, algo, ws, ws_bytes, &zero, ydsc, y));
      report("   everything cached: Forward only", t0, n);
      t0 = now_us();
      for (int i = 0; i < n; ++i) {
        CK(cudnnConvolutionForward(h, &one, xdsc, x, wdsc, w, cdsc, algo, ws, ws_bytes, &zero, ydsc, y));
        CK(cudaStreamSynchronize(stream));
      }
      report("   Forward + sync (host + device)", t0, n);
      // CUDA graph of the same call: replay cost.
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < 10; ++i)
        CK(cudnnConvolutionForward(h, &one, xdsc, x, wdsc, w, cdsc, algo, ws, ws_bytes, &zero, ydsc, y));
      CK(cudaStreamEndCapture(stream, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      t0 = now_us();
      for (int i = 0; i < n / 10; ++i) CK(cudaGraphLaunch(ge, stream));
      report("   CUDA graph replay of 10 captured convs (per replay)", t0, n / 10);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
      destroy();
      cudaFree(x), cudaFree(w), cudaFree(y);
      if (ws) cudaFree(ws);
    }
  return 0;
}
