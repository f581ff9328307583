// Softmax, LogSoftmax and Hardmax on CUDA: one thread per row running the CPU's row functor
// (src/kernels/softmax.h), so each row is summed in the same order as on the CPU; rows as the CPU's
// ops/softmax.cpp splits them (opset < 13: coerced to 2-D at axis; 13+: one axis).
#include "backends/cuda/launch.cuh"
#include "kernels/softmax.h"
#include "ops/op.h"
#include "ops/reduce.h"
#include "tensor/dispatch.h"

namespace mpa::cuda {

namespace {

template <class Row, class T>
void softmax_rows(const T* in, T* out, compute_t<T>* scratch, int64_t rows, int64_t n, int64_t inner) {
  using A = compute_t<T>;
  for_each_index(rows, [=] __device__(int64_t r) {
    const int64_t offset = (r / inner) * n * inner + r % inner;
    A* tmp = scratch ? scratch + r * n : reinterpret_cast<A*>(out + offset);
    Row{}(in + offset, out + offset, n, inner, tmp);
  });
}

template <class Row>
class SoftmaxFamilyOp : public OpKernel {
 public:
  explicit SoftmaxFamilyOp(const OpInit& init)
      : coerce_2d_(init.opset() < 13), axis_(init.get_int("axis", init.opset() < 13 ? 1 : -1)) {}

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const AxisSplit s = softmax_rows_of(x.shape(), axis_, coerce_2d_, ctx.node().label());
    Tensor y = running().empty(x.dtype(), x.shape());
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      // float and double rows along the last axis keep their intermediate values in the output, as on the CPU.
      std::shared_ptr<std::byte[]> scratch;
      if (!(std::is_same_v<T, A> && s.inner == 1))
        scratch = running().allocate(static_cast<size_t>(x.numel()) * sizeof(A));
      softmax_rows<Row>(device_data<T>(x), device_data<T>(y), reinterpret_cast<A*>(scratch.get()), s.outer * s.inner,
                        s.n, s.inner);
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  bool coerce_2d_;
  int64_t axis_;
};

using SoftmaxKernel = SoftmaxFamilyOp<SoftmaxRow>;
using LogSoftmaxKernel = SoftmaxFamilyOp<LogSoftmaxRow>;
using HardmaxKernel = SoftmaxFamilyOp<HardmaxRow>;

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "Softmax", SoftmaxKernel, 1, 11, 13);
MPA_REGISTER_KERNEL("cuda", "", "LogSoftmax", LogSoftmaxKernel, 1, 11, 13);
MPA_REGISTER_KERNEL("cuda", "", "Hardmax", HardmaxKernel, 1, 11, 13);

}  // namespace mpa::cuda
