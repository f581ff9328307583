// com.microsoft MatMulNBits (onnxruntime contrib op, the weight-only quantised MatMul its quantisation tools
// emit): Y = A W^T (+ bias), W [N, K] dequantised from `bits`-bit integers in blocks of block_size along K:
//   W[n, k] = (q[n, k] - zero_point[n, blk]) * scale[n, blk],  blk = g_idx[k] if given, else k / block_size.
// B is uint8 [N, ceil(K / block_size), block_size * bits / 8], each byte holding 8 / bits values from the
// least significant bits up; zero points are packed the same way per row (uint8 [N * ceil(blocks * bits / 8)])
// or given in scales' type ([N * blocks]), 2^(bits - 1) when absent.
// W is formed in the accumulation type and rounded onto the format the op's values lie in (a GPU runtime
// dequantises fp16 weights to fp16); the GEMM then follows the GEMM accumulation setting. accuracy_level
// (onnxruntime's minimum accuracy of A: 1 fp32, 2 fp16, 3 bf16, 4 int8) is not modelled: the product is
// the fp32 one of levels 0 and 1, whereas onnxruntime's CPU kernel at level 4 quantises A to int8 per block.
#include "backends/cpu/gemm.h"
#include "ops/compute_buffer.h"
#include "ops/op.h"

namespace mpa {
namespace {

class MatMulNBitsOp : public OpKernel {
 public:
  explicit MatMulNBitsOp(const OpInit& init)
      : K_(init.require_int("K")),
        N_(init.require_int("N")),
        bits_(init.get_int("bits", 4)),
        block_size_(init.require_int("block_size")) {
    const std::string who = init.node().label();
    if (!(bits_ == 2 || bits_ == 4 || bits_ == 8))
      fail(who + ": bits " + std::to_string(bits_) + " is not supported (2, 4 or 8)");
    if (!(block_size_ >= 16 && (block_size_ & (block_size_ - 1)) == 0))
      fail(who + ": block_size must be a power of 2 and >= 16, got " + std::to_string(block_size_));
    if (!(K_ >= 0 && N_ >= 0)) fail(who + ": K and N must not be negative");
  }

  void compute(KernelContext& ctx) const override {
    const std::string who = ctx.node().label();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor& scales = ctx.input(2);
    const Tensor* zero_points = ctx.optional_input(3);
    const Tensor* g_idx = ctx.optional_input(4);
    const Tensor* bias = ctx.optional_input(5);
    const int64_t blocks = (K_ + block_size_ - 1) / block_size_;
    const int64_t blob = block_size_ * bits_ / 8;
    if (!(a.rank() >= 1 && a.shape().back() == K_))
      fail(who + ": A's last dimension must be K = " + std::to_string(K_) + ", got " + shape_str(a.shape()));
    if (!(a.dtype() == DType::Float32 || a.dtype() == DType::Float16 || a.dtype() == DType::BFloat16))
      fail(who + ": A must be float, float16 or bfloat16, got " + dtype_name(a.dtype()));
    auto expect = [&](const Tensor& t, DType dtype, int64_t count, const std::string& what) {
      if (!(t.dtype() == dtype && t.numel() == count))
        fail(who + ": " + what + " must be " + dtype_name(dtype) + " with " + std::to_string(count) +
             " elements, got " + dtype_name(t.dtype()) + " " + shape_str(t.shape()));
    };
    expect(b, DType::UInt8, N_ * blocks * blob, "B");
    expect(scales, a.dtype(), N_ * blocks, "scales");
    const bool packed_zero_points = zero_points && zero_points->dtype() == DType::UInt8;
    const int64_t zp_row_bytes = (blocks * bits_ + 7) / 8;
    if (zero_points)
      expect(*zero_points, packed_zero_points ? DType::UInt8 : a.dtype(),
             packed_zero_points ? N_ * zp_row_bytes : N_ * blocks, "zero_points");
    if (g_idx) expect(*g_idx, DType::Int32, K_, "g_idx");
    if (bias) expect(*bias, a.dtype(), N_, "bias");
    std::vector<int64_t> block_of(static_cast<size_t>(K_));
    for (int64_t k = 0; k < K_; ++k) {
      block_of[k] = g_idx ? g_idx->data<int32_t>()[k] : k / block_size_;
      if (!(block_of[k] >= 0 && block_of[k] < blocks))
        fail(who + ": g_idx[" + std::to_string(k) + "] = " + std::to_string(block_of[k]) + " is not a block in [0, " +
             std::to_string(blocks) + ")");
    }

    Shape out_shape = a.shape();
    out_shape.back() = N_;
    Tensor& y = ctx.allocate_output(0, a.dtype(), out_shape);
    if (y.numel() == 0) return;
    const int64_t M = y.numel() / N_;
    const Format weight_format = value_format(ctx.config(), a.dtype());
    const uint32_t mask = (1u << bits_) - 1;
    auto unpack = [&](const uint8_t* row, int64_t i) {
      return static_cast<float>((row[(i * bits_) / 8] >> ((i * bits_) % 8)) & mask);
    };
    visit_float(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<compute_t<T>, float>) {
        std::vector<float> w(static_cast<size_t>(N_ * K_));
        parallel_for(N_, std::max<int64_t>(1, 16384 / std::max<int64_t>(K_, 1)), [&](int64_t nb, int64_t ne) {
          for (int64_t n = nb; n < ne; ++n) {
            const uint8_t* q = b.data<uint8_t>() + n * blocks * blob;
            for (int64_t k = 0; k < K_; ++k) {
              const int64_t blk = block_of[k];
              const float scale = load(scales.data<T>()[n * blocks + blk]);
              float zp = static_cast<float>(1 << (bits_ - 1));
              if (packed_zero_points)
                zp = unpack(zero_points->data<uint8_t>() + n * zp_row_bytes, blk);
              else if (zero_points)
                zp = load(zero_points->data<T>()[n * blocks + blk]);
              w[n * K_ + k] = round_to_format(weight_format, (unpack(q, k) - zp) * scale);
            }
          }
        });
        std::vector<float> ah;
        const float* ad = as_acc<T>(a, ah);
        AccOutput<T> out(y);
        float* yd = out.data();
        cpu::gemm(false, true, M, N_, K_, 1.0f, ad, K_, w.data(), K_, 0.0f, yd, N_, gemm_math(ctx.config(), a.dtype()));
        if (bias) {
          const T* pb = bias->data<T>();
          parallel_for(M * N_, 1 << 14, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) yd[i] += load(pb[i % N_]);
          });
        }
        out.finish();
      }
    });
  }

 private:
  int64_t K_, N_, bits_, block_size_;
};

}  // namespace

MPA_OP_TRAITS("com.microsoft", "MatMulNBits",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("com.microsoft", "MatMulNBits", MatMulNBitsOp, 1);

}  // namespace mpa
