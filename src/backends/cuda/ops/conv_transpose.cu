// ConvTranspose on CUDA, as ops/conv_transpose.cpp computes it on the CPU, with the CPU's checks and geometry
// (ops/conv_geometry.h, transposed_conv): per image and group, col = W_gᵀ·X_g on cuBLAS with the node's GEMM
// math, then each output element gathers the columns that land on it, in kernel order, onto its bias: the
// additions the CPU's col2im scatter makes, in the same order (the overlap sums stay in float, and the executor
// rounds the output once).
#include "backends/cuda/launch.cuh"
#include "backends/cuda/ops/cublas_gemm.h"
#include "backends/cuda/ops/transposed_columns.h"
#include "ops/conv_geometry.h"

namespace mpa::cuda {

namespace {

// y (bias or zeros first) += col2im(W_gᵀ·X_g) per image n and group.
template <class T>
void transposed_convolution(const KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b,
                            const TransposedConv& shape, int64_t group, Tensor& y) {
  const Col2im windows(shape.g);
  const int64_t batch = x.dim(0), channels = x.dim(1), cg = shape.group_channels, mg = shape.group_outputs;
  const int64_t out_channels = mg * group, out_size = windows.out_size, ksize = windows.kernel_size;
  const int64_t in_size = windows.in_size;
  T* out = device_data<T>(y);
  if (b) {
    const T* bias = device_data<T>(*b);
    for_each_index(y.numel(), [=] __device__(int64_t i) { out[i] = bias[(i / out_size) % out_channels]; });
  } else {
    check(cudaMemsetAsync(out, 0, y.nbytes(), running().stream()), "cudaMemsetAsync");
  }
  Tensor col = running().empty(x.dtype(), {mg * ksize, in_size});
  const T* columns = device_data<T>(col);
  const GemmMath math = gemm_math(ctx.config(), x.dtype());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t gi = 0; gi < group; ++gi) {
      if (cg == 0 || in_size == 0 || ksize == 0) continue;  // no columns: the bias stands
      run_gemm(columns_call(shape, windows, channels, n, gi), math, w, x, col);
      T* slice = out + (n * out_channels + gi * mg) * out_size;
      for_each_index(mg * out_size, [=] __device__(int64_t i) { windows.add(columns, slice, i); });
    }
}

class ConvTransposeOp : public OpKernel {
 public:
  explicit ConvTransposeOp(const OpInit& init) : attrs_(TransposedConvAttrs::read(init)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor &x = ctx.input(0), &w = ctx.input(1), *b = ctx.optional_input(2);
    if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
      fail(ctx.node().label() + ": ConvTranspose on " + dtype_name(x.dtype()) +
           " has no CUDA kernel (float32 and float64 only); run it with --device cpu");
    const TransposedConv shape = transposed_conv(ctx.node().label(), attrs_, x, w, b);
    Tensor y = running().empty(x.dtype(), shape.out_shape);
    if (y.numel() > 0) {
      if (x.dtype() == DType::Float64)
        transposed_convolution<double>(ctx, x, w, b, shape, attrs_.group, y);
      else
        transposed_convolution<float>(ctx, x, w, b, shape, attrs_.group, y);
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  TransposedConvAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "ConvTranspose", ConvTransposeOp, 1, 11, 22);

}  // namespace mpa::cuda
