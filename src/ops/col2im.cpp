// Col2Im (18): the inverse of im2col. Each column l of input [N, C * prod(block_shape), L] holds one block
// position's patch; the patches are summed back into an image [N, C, *image_shape] (overlaps add up), with
// strides, dilations and pads as a convolution over the image would have them. Any number of spatial dims.
#include "ops/compute_buffer.h"
#include "ops/shape_helpers.h"

namespace mpa {

namespace {

class Col2ImOp : public OpKernel {
 public:
  explicit Col2ImOp(const OpInit& init)
      : dilations_(init.get_ints("dilations")), pads_(init.get_ints("pads")), strides_(init.get_ints("strides")) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> image = index_values(node, ctx.input(1)), block = index_values(node, ctx.input(2));
    const size_t dims = image.size();
    if (dims == 0 || block.size() != dims)
      fail(node.label() + ": image_shape and block_shape must have one size per spatial dim");
    const auto or_default = [&](std::vector<int64_t> v, size_t n, int64_t fill, const char* what) {
      if (v.empty()) v.assign(n, fill);
      if (v.size() != n) fail(node.label() + ": " + what + " must have " + std::to_string(n) + " values");
      return v;
    };
    const std::vector<int64_t> dilations = or_default(dilations_, dims, 1, "dilations");
    const std::vector<int64_t> pads = or_default(pads_, 2 * dims, 0, "pads");
    const std::vector<int64_t> strides = or_default(strides_, dims, 1, "strides");
    int64_t block_size = 1, blocks = 1;
    std::vector<int64_t> positions(dims);  // block positions per dim
    for (size_t d = 0; d < dims; ++d) {
      if (image[d] <= 0 || block[d] <= 0 || dilations[d] <= 0 || strides[d] <= 0 || pads[d] < 0 || pads[dims + d] < 0)
        fail(node.label() + ": sizes, dilations and strides must be positive, pads not negative");
      block_size *= block[d];
      const int64_t span = image[d] + pads[d] + pads[dims + d] - dilations[d] * (block[d] - 1) - 1;
      positions[d] = span < 0 ? 0 : span / strides[d] + 1;
      blocks *= positions[d];
    }
    if (x.rank() != 3 || x.dim(1) % block_size != 0 || x.dim(2) != blocks)
      fail(node.label() + ": input " + shape_str(x.shape()) + " is not [N, C * " + std::to_string(block_size) + ", " +
           std::to_string(blocks) + "]");
    const int64_t batch = x.dim(0), channels = x.dim(1) / block_size;
    Shape out_shape = {batch, channels};
    out_shape.insert(out_shape.end(), image.begin(), image.end());
    Tensor& y = allocate_checked(ctx, 0, x.dtype(), out_shape);
    const int64_t pixels = checked_numel(node, image);
    visit_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      std::vector<Acc> holder;
      const Acc* in = as_acc<T>(x, holder);
      AccOutput<T> out(y);
      Acc* o = out.data();
      // One (n, c) image per task: its sums never race.
      parallel_for(batch * channels, 1, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> k(dims), p(dims);
        for (int64_t nc = begin; nc < end; ++nc) {
          Acc* plane = o + nc * pixels;
          std::fill(plane, plane + pixels, Acc(0));
          const Acc* cols = in + nc * block_size * blocks;
          for (int64_t kb = 0; kb < block_size; ++kb) {
            for (int64_t rest = kb, d = int64_t(dims) - 1; d >= 0; --d) {
              k[size_t(d)] = rest % block[size_t(d)];
              rest /= block[size_t(d)];
            }
            for (int64_t l = 0; l < blocks; ++l) {
              int64_t at = 0;
              bool inside = true;
              for (int64_t rest = l, d = int64_t(dims) - 1; d >= 0; --d) {
                p[size_t(d)] = rest % positions[size_t(d)];
                rest /= positions[size_t(d)];
              }
              for (size_t d = 0; d < dims && inside; ++d) {
                const int64_t i = p[d] * strides[d] - pads[d] + k[d] * dilations[d];
                inside = i >= 0 && i < image[d];
                at = at * image[d] + i;
              }
              if (inside) plane[at] += cols[kb * blocks + l];
            }
          }
        }
      });
      out.finish();
    });
  }

 private:
  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

MPA_OP_TRAITS("", "Col2Im",
              {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::Fp32, .host_inputs = {1, 2}});
MPA_REGISTER_OP("", "Col2Im", Col2ImOp, 18);

}  // namespace mpa
