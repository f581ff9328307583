#include "backends/cuda/math_modes.h"

namespace mpa::cuda {

GemmMath gemm_math(const ExecConfig& config, DType dtype) {
  if (dtype == DType::Float64) return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUBLAS_DEFAULT_MATH};
  switch (value_format(config, dtype)) {
    case Format::FP16:
      if (config.accumulation == Accumulation::FP16)
        return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUBLAS_DEFAULT_MATH};
      return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH};
    case Format::BF16: return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH};
    default: break;
  }
  if (config.tf32_gemm_inputs)
    return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_TF32_TENSOR_OP_MATH};
  return {};
}

std::string gemm_unsupported(const ExecConfig& config) {
  if (config.accumulation == Accumulation::FP16 && config.storage == Format::BF16)
    return "cuBLAS has no bf16 accumulator (--accumulate fp16 on bf16 values is emulated on the CPU only)";
  return {};
}

ConvMath conv_math(const ExecConfig& config, DType dtype) {
  if (dtype == DType::Float64) return {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_FMA_MATH};
  switch (value_format(config, dtype)) {
    case Format::FP16:
      if (config.accumulation == Accumulation::FP16) return {CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH};
      return {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH};
    case Format::BF16: return {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH};
    default: break;
  }
  if (config.tf32_gemm_inputs) return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION};
  return {};
}

std::string gemm_math_name(const GemmMath& math) {
  const auto type = [](cudaDataType t) {
    switch (t) {
      case CUDA_R_16F: return "fp16";
      case CUDA_R_16BF: return "bf16";
      case CUDA_R_64F: return "fp64";
      default: return "fp32";
    }
  };
  const char* compute = "CUBLAS_COMPUTE_32F_PEDANTIC";
  switch (math.compute) {
    case CUBLAS_COMPUTE_16F: compute = "CUBLAS_COMPUTE_16F"; break;
    case CUBLAS_COMPUTE_32F: compute = "CUBLAS_COMPUTE_32F"; break;
    case CUBLAS_COMPUTE_32F_FAST_TF32: compute = "CUBLAS_COMPUTE_32F_FAST_TF32"; break;
    case CUBLAS_COMPUTE_64F: compute = "CUBLAS_COMPUTE_64F"; break;
    default: break;
  }
  return std::string(type(math.operands)) + " operands, " + type(math.output) + " output, " + compute;
}

std::string conv_math_name(const ConvMath& math) {
  const auto type = [](cudnnDataType_t t) {
    switch (t) {
      case CUDNN_DATA_HALF: return "fp16";
      case CUDNN_DATA_BFLOAT16: return "bf16";
      case CUDNN_DATA_DOUBLE: return "fp64";
      default: return "fp32";
    }
  };
  const char* mode = math.math == CUDNN_FMA_MATH                          ? "CUDNN_FMA_MATH"
                     : math.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION"
                                                                          : "CUDNN_DEFAULT_MATH";
  return std::string(type(math.data)) + " data, " + type(math.compute) + " accumulation, " + mode;
}

}  // namespace mpa::cuda
