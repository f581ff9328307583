// The CUDA side of the elementwise op family (ops/elementwise.h): the same functors from src/kernels/, the
// same type sets, attribute readers (make_functor) and broadcasting rules as the CPU's UnaryOp and BinaryOp,
// with grid-stride loops in place of the host's. Registered in unary.cu and binary.cu, one line per op.
#pragma once
#include <type_traits>

#include "backends/cuda/launch.cuh"
#include "kernels/stored.h"
#include "ops/elementwise.h"

namespace mpa::cuda {

template <class In, class Out, class F>
void map_unary(const In* in, Out* out, int64_t n, F f) {
  for_each_index(n, [=] __device__(int64_t i) { out[i] = f(in[i]); });
}

template <class A, class B, class Out, class F>
void map_binary(const A* a, const B* b, Out* out, int64_t n, const BroadcastIndex& index, bool same_shapes, F f) {
  if (same_shapes) return for_each_index(n, [=] __device__(int64_t i) { out[i] = f(a[i], b[i]); });
  for_each_index(n, [=] __device__(int64_t i) {
    int64_t off[2];
    index.offsets(i, off, 2);
    out[i] = f(a[off[0]], b[off[1]]);
  });
}

// Fails, as the CPU's require_nonzero_divisor does, when an integer divisor on the device holds a zero.
template <class B>
void require_nonzero_divisor_on_device(const Node& node, const B* b, int64_t n) {
  std::shared_ptr<std::byte[]> flag = running().allocate(sizeof(int));
  int* zero = reinterpret_cast<int*>(flag.get());
  check(cudaMemsetAsync(zero, 0, sizeof(int), running().stream()), "cudaMemsetAsync");
  for_each_index(n, [=] __device__(int64_t i) {
    if (b[i] == B(0)) *zero = 1;  // every writer writes the same value
  });
  int found = 0;
  check(cudaMemcpyAsync(&found, zero, sizeof(int), cudaMemcpyDeviceToHost, running().stream()), "divisor check");
  check(cudaStreamSynchronize(running().stream()), "divisor check");
  if (found) fail(node.label() + ": integer division by zero");
}

template <class F, TypeSet S, bool kBoolOut = false>
class UnaryOp : public OpKernel {
 public:
  explicit UnaryOp(const OpInit& init) : f_(make_functor<F>(init)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    visit_types<S>(ctx.node(), x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Out = std::conditional_t<kBoolOut, bool, T>;
      Tensor y = running().empty(dtype_of<Out>, x.shape());
      map_unary(device_data<T>(x), device_data<Out>(y), x.numel(), Stored<Out, F>{f_});
      ctx.set_output(0, std::move(y));
    });
  }

 private:
  F f_;
};

template <class F, BinaryTraits Tr>
class BinaryOp : public OpKernel {
 public:
  explicit BinaryOp(const OpInit& init) : f_(make_functor<F>(init)), legacy_(init) {}
  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Shape b_shape = legacy_.rhs_shape(node, a.shape(), b.shape());
    const Shape out_shape = broadcast_output_shape(node, {a.shape(), b_shape});
    const BroadcastIndex index = broadcast_index(out_shape, {a.shape(), b_shape});
    const bool same_shapes = a.shape() == out_shape && b_shape == out_shape;
    visit_types<Tr.types>(node, a.dtype(), [&](auto a_tag) {
      using A = typename decltype(a_tag)::type;
      auto run = [&](auto b_tag) {
        using B = typename decltype(b_tag)::type;
        using Out = std::conditional_t<Tr.bool_out, bool, A>;
        if constexpr (Tr.nonzero_divisor && std::is_integral_v<B>)
          require_nonzero_divisor_on_device(node, device_data<B>(b), b.numel());
        Tensor y = running().empty(dtype_of<Out>, out_shape);
        map_binary(device_data<A>(a), device_data<B>(b), device_data<Out>(y), y.numel(), index, same_shapes,
                   Stored<Out, F>{f_});
        ctx.set_output(0, std::move(y));
      };
      if constexpr (Tr.same_types) {
        if (!(b.dtype() == a.dtype()))
          fail(node.label() + ": inputs have different element types " + dtype_name(a.dtype()) + " and " +
               dtype_name(b.dtype()));
        run(a_tag);
      } else {
        visit_types<Tr.rhs_types>(node, b.dtype(), run);
      }
    });
  }

 private:
  F f_;
  LegacyBroadcast legacy_;
};

}  // namespace mpa::cuda
