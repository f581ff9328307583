// Ops whose outputs follow from attributes, input shapes and host inputs alone (Constant, ConstantOfShape,
// Shape, Size): the CPU's own kernel computes them on the host, reading no device element, and its outputs
// are copied to the device, where their consumers run. One adapter, no second implementation.
#include "backends/cuda/cuda_backend.h"
#include "ops/op.h"

namespace mpa::cuda {

namespace {

class HostComputedOp : public OpKernel {
 public:
  explicit HostComputedOp(const OpInit& init)
      : cpu_(std::invoke(*OpRegistry::instance().find("cpu", init.node().domain, init.node().op_type, init.opset()),
                         init)) {}

  void compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> inputs(ctx.num_inputs());
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = ctx.optional_input(i);
    std::vector<Tensor> outputs;
    KernelContext host(ctx.node(), inputs, outputs, ctx.config());
    cpu_->compute(host);
    for (size_t o = 0; o < outputs.size(); ++o)
      if (outputs[o].defined()) ctx.set_output(o, running().upload(outputs[o]));
  }

 private:
  std::unique_ptr<OpKernel> cpu_;
};

}  // namespace

MPA_REGISTER_KERNEL("cuda", "", "Constant", HostComputedOp, 1, 9, 11, 12, 13, 19, 21, 23, 24, 25);
MPA_REGISTER_KERNEL("cuda", "", "ConstantOfShape", HostComputedOp, 9, 20, 21, 23, 24, 25);
MPA_REGISTER_KERNEL("cuda", "", "Shape", HostComputedOp, 1, 13, 15, 19, 21, 23, 24, 25);
MPA_REGISTER_KERNEL("cuda", "", "Size", HostComputedOp, 1, 13, 19, 21, 23, 24, 25);

}  // namespace mpa::cuda
