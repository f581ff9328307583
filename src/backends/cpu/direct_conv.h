// The CPU backend's seam to oneDNN's direct convolution (its brgconv/jit kernels): fp32 2-D convolutions
// whose weights are a constant of the session. oneDNN computes in layouts of its own (brgconv on AVX-512: NHWC
// activations, blocked weights): the input and output are reordered from and to NCHW at every call, the weights
// once per weights tensor, here, and kept. Without oneDNN in the build, run() declines every convolution and
// the caller keeps its own path.
#pragma once
#include <cstdint>
#include <memory>

namespace mpa::cpu {

// One 2-D convolution, NCHW input, OIHW weights (one group), per spatial dimension (height, width).
struct Conv2dShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0;
  int64_t in[2] = {}, kernel[2] = {}, stride[2] = {}, dilation[2] = {}, pad_begin[2] = {}, pad_end[2] = {}, out[2] = {};
};

// Whether the build has oneDNN's convolutions (MPA_HAVE_DNNL).
bool direct_conv_available();

// The convolutions one Conv node runs through oneDNN, with what it made for them: primitives per shape, and per
// weights tensor its layout. Thread-safe (a kernel's compute() may run concurrently): what a call lacks is
// made under a lock, the convolution itself runs unlocked.
class DirectConv {
 public:
  DirectConv();
  ~DirectConv();
  DirectConv(const DirectConv&) = delete;
  DirectConv& operator=(const DirectConv&) = delete;

  // y = conv(x, w) + bias (bias may be nullptr), every array dense and fp32: x N x IC x H x W, w OC x IC x KH x
  // KW, y N x OC x OH x OW, summed in fp32 in oneDNN's order. `w` must be a constant whose storage and values
  // outlive this object (a session's initializer): its layout is made on the first call and kept, keyed on
  // `w`'s address and `weights_format` (the storage format its values were converted to). Returns false,
  // having written nothing, where oneDNN has no direct kernel for the shape; fails where oneDNN fails.
  bool run(const Conv2dShape& shape, const float* x, const float* w, int weights_format, const float* bias,
           float* y) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mpa::cpu
