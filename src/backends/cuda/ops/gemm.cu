// MatMul and Gemm on cuBLAS. Operands reach cuBLAS in the format the node computes in, with the compute
// type its settings name (backends/cuda/math_modes.h): the shapes, broadcasting and C handling are the
// CPU's (ops/matmul.cpp, ops/gemm.cpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/ops/cublas_gemm.h"
#include "backends/cuda/math_modes.h"
#include "ops/gemm.h"
#include "ops/matmul.h"

namespace mpa::cuda {

namespace {

// A float32 or float64 device array in the operand type of `math` (a scratch copy for 16-bit operands:
// exact, since the values are on the format's grid), kept alive by the returned holder.
struct Operand {
  const void* data;
  std::shared_ptr<std::byte[]> holder;
};
Operand as_operand(const Tensor& t, cudaDataType type) {
  if (type != CUDA_R_16F && type != CUDA_R_16BF) return {t.device_raw(running().device()), nullptr};
  std::shared_ptr<std::byte[]> scratch = running().allocate(static_cast<size_t>(t.numel()) * 2);
  const float* in = device_data<float>(t);
  if (type == CUDA_R_16F) {
    __half* out = reinterpret_cast<__half*>(scratch.get());
    for_each_index(t.numel(), [=] __device__(int64_t i) { out[i] = __float2half_rn(in[i]); });
  } else {
    __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(scratch.get());
    for_each_index(t.numel(), [=] __device__(int64_t i) { out[i] = __float2bfloat16_rn(in[i]); });
  }
  return {scratch.get(), scratch};
}

}  // namespace

// cuBLAS is column-major: the row-major C is its C^T = op(B)^T op(A)^T, so B goes first.
void run_gemm(const GemmCall& call, const GemmMath& math, const Tensor& a, const Tensor& b, Tensor& c) {
  const CudaBackend& backend = running();
  const Operand A = as_operand(a, math.operands), B = as_operand(b, math.operands);
  const size_t operand_size = math.operands == CUDA_R_64F ? 8 : math.operands == CUDA_R_32F ? 4 : 2;
  const size_t out_size = math.output == CUDA_R_64F ? 8 : math.output == CUDA_R_32F ? 4 : 2;
  // fp16 accumulation writes fp16: C goes through an fp16 scratch copy, widened (exactly) afterwards.
  std::shared_ptr<std::byte[]> half_c;
  void* C = c.device_raw(backend.device());
  if (math.output == CUDA_R_16F) {
    half_c = backend.allocate(static_cast<size_t>(c.numel()) * 2);
    __half* h = reinterpret_cast<__half*>(half_c.get());
    const float* f = device_data<float>(c);
    if (call.beta != 0) for_each_index(c.numel(), [=] __device__(int64_t i) { h[i] = __float2half_rn(f[i]); });
    C = h;
  }
  cublasHandle_t handle = backend.cublas();
  check(cublasSetMathMode(handle, math.math_mode), "cublasSetMathMode");
  const float alpha32 = static_cast<float>(call.alpha), beta32 = static_cast<float>(call.beta);
  const __half alpha16 = __float2half_rn(alpha32), beta16 = __float2half_rn(beta32);
  const void* alpha = math.compute == CUBLAS_COMPUTE_64F   ? static_cast<const void*>(&call.alpha)
                      : math.compute == CUBLAS_COMPUTE_16F ? static_cast<const void*>(&alpha16)
                                                           : static_cast<const void*>(&alpha32);
  const void* beta = math.compute == CUBLAS_COMPUTE_64F   ? static_cast<const void*>(&call.beta)
                     : math.compute == CUBLAS_COMPUTE_16F ? static_cast<const void*>(&beta16)
                                                          : static_cast<const void*>(&beta32);
  const cublasOperation_t op_a = call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                          op_b = call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto at = [](const void* base, int64_t offset, size_t size) {
    return static_cast<const char*>(base) + offset * static_cast<int64_t>(size);
  };
  const size_t batch = call.c_offsets.size();
  // A batch of evenly spaced matrices is one strided call; broadcast batches that are not go one by one.
  const auto even = [batch](const std::vector<int64_t>& offsets) {
    if (offsets.size() != batch) return false;
    for (size_t i = 2; i < offsets.size(); ++i)
      if (offsets[i] - offsets[i - 1] != offsets[1] - offsets[0]) return false;
    return true;
  };
  const auto stride = [](const std::vector<int64_t>& o) { return o.size() > 1 ? o[1] - o[0] : 0; };
  if (even(call.a_offsets) && even(call.b_offsets) && even(call.c_offsets)) {
    check(cublasGemmStridedBatchedEx(handle, op_b, op_a, int(call.N), int(call.M), int(call.K), alpha,
                                     at(B.data, call.b_offsets[0], operand_size), math.operands, int(call.ldb),
                                     stride(call.b_offsets), at(A.data, call.a_offsets[0], operand_size), math.operands,
                                     int(call.lda), stride(call.a_offsets), beta,
                                     const_cast<char*>(at(C, call.c_offsets[0], out_size)), math.output, int(call.ldc),
                                     stride(call.c_offsets), int(batch), math.compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  } else {
    for (size_t i = 0; i < batch; ++i)
      check(cublasGemmEx(handle, op_b, op_a, int(call.N), int(call.M), int(call.K), alpha,
                         at(B.data, call.b_offsets[i], operand_size), math.operands, int(call.ldb),
                         at(A.data, call.a_offsets[i], operand_size), math.operands, int(call.lda), beta,
                         const_cast<char*>(at(C, call.c_offsets[i], out_size)), math.output, int(call.ldc),
                         math.compute, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
  }
  if (half_c) {
    const __half* h = reinterpret_cast<const __half*>(half_c.get());
    float* f = device_data<float>(c);
    for_each_index(c.numel(), [=] __device__(int64_t i) { f[i] = __half2float(h[i]); });
  }
}

namespace {

// Y[M, N] = C broadcast (row step c_row, column step c_col).
template <class T>
void broadcast_rows(const T* c, T* y, int64_t M, int64_t N, int64_t c_row, int64_t c_col) {
  for_each_index(M * N, [=] __device__(int64_t i) { y[i] = c[(i / N) * c_row + (i % N) * c_col]; });
}

void require_gemm_type(const Node& node, const Tensor& t) {
  if (t.dtype() != DType::Float32 && t.dtype() != DType::Float64)
    fail(node.label() + ": " + node.op_type + " on " + dtype_name(t.dtype()) +
         " has no CUDA kernel (float32 and float64 only); run it with --device cpu");
}

class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(const OpInit&) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatMulGeometry g = matmul_geometry(ctx.node().label(), a, b);
    require_gemm_type(ctx.node(), a);
    const int64_t M = g.M, N = g.N, K = g.K;
    const Shape &a_batch = g.a_batch, &b_batch = g.b_batch, &out_batch = g.out_batch, &out_shape = g.out_shape;
    Tensor y = running().empty(a.dtype(), out_shape);
    if (y.numel() > 0 && K == 0) {
      check(cudaMemsetAsync(y.device_raw(running().device()), 0, y.nbytes(), running().stream()), "cudaMemsetAsync");
    } else if (y.numel() > 0) {
      GemmCall call;
      call.K = K;
      call.lda = K;
      call.ldb = N;
      call.ldc = N;
      const int64_t batch = shape_numel(out_batch);
      if (shape_numel(b_batch) == 1 && shape_numel(a_batch) == batch) {
        call.M = batch * M;  // the batch folds into M, as on the CPU
        call.N = N;
      } else {
        call.M = M;
        call.N = N;
        call.a_offsets = batch_offsets(a_batch, out_batch, M * K);
        call.b_offsets = batch_offsets(b_batch, out_batch, K * N);
        call.c_offsets.resize(static_cast<size_t>(batch));
        for (int64_t i = 0; i < batch; ++i) call.c_offsets[static_cast<size_t>(i)] = i * M * N;
      }
      run_gemm(call, gemm_math(ctx.config(), a.dtype()), a, b, y);
    }
    ctx.set_output(0, std::move(y));
  }
};

class GemmOp : public OpKernel {
 public:
  explicit GemmOp(const OpInit& init) : attrs_(init) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* c = ctx.optional_input(2);
    const GemmGeometry g = attrs_.geometry(ctx.node().label(), a, b, c);
    require_gemm_type(ctx.node(), a);
    const bool use_c = c && attrs_.beta != 0.f;
    Tensor y = running().empty(a.dtype(), {g.M, g.N});
    // C is broadcast into Y as it is and cuBLAS applies beta in its epilogue (one rounding of
    // alpha * AB + beta * C), as on the CPU.
    if (use_c) {
      if (a.dtype() == DType::Float64)
        broadcast_rows(device_data<double>(*c), device_data<double>(y), g.M, g.N, g.c_row, g.c_col);
      else
        broadcast_rows(device_data<float>(*c), device_data<float>(y), g.M, g.N, g.c_row, g.c_col);
    }
    if (y.numel() > 0) {
      GemmCall call;
      call.trans_a = attrs_.trans_a;
      call.trans_b = attrs_.trans_b;
      call.M = g.M;
      call.N = g.N;
      call.K = g.K;
      call.lda = a.dim(1);
      call.ldb = b.dim(1);
      call.ldc = g.N;
      call.alpha = attrs_.alpha;
      call.beta = use_c ? attrs_.beta : 0.0;
      run_gemm(call, gemm_math(ctx.config(), a.dtype()), a, b, y);
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  GemmAttrs attrs_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "MatMul", MatMulOp, 1, 9, 13);
MPA_REGISTER_KERNEL("cuda", "", "Gemm", GemmOp, 1, 6, 7, 9, 11, 13);

}  // namespace mpa::cuda
