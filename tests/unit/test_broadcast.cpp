#include <gtest/gtest.h>

#include "backends/cpu/broadcast_loops.h"

using namespace mpa;

namespace {

// Reference: the input offset of every output element, computed by full index arithmetic.
std::vector<int64_t> reference_offsets(const Shape& out, const Shape& in) {
  std::vector<int64_t> offsets;
  const int64_t n = shape_numel(out);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat, offset = 0, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t idx = rem % out[d];
      rem /= out[d];
      const size_t shift = out.size() - in.size();
      if (d >= shift) {
        const int64_t in_dim = in[d - shift];
        offset += (in_dim == 1 ? 0 : idx) * stride;
        stride *= in_dim;
      }
    }
    offsets.push_back(offset);
  }
  return offsets;
}

}  // namespace

TEST(Broadcast, ShapesFollowNumpyRules) {
  EXPECT_EQ(broadcast_shapes({{2, 1, 4}, {3, 1}}), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({{}, {5}}), (Shape{5}));
  EXPECT_EQ(broadcast_shapes({{0, 3}, {1, 3}}), (Shape{0, 3}));
  EXPECT_THROW(broadcast_shapes({{2, 3}, {4, 3}}), Error);
}

TEST(Broadcast, RunsVisitTheSameOffsetsAsIndexArithmetic) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},    {{2, 3, 4}, {3, 1}}, {{2, 3, 4}, {}},
      {{2, 3, 4}, {2, 1, 4}}, {{1, 3, 1}, {1, 1}}, {{5, 1, 7}, {1, 1, 7}}, {{2, 3, 4}, {1, 3, 4}},
  };
  for (const auto& [a, b] : cases) {
    const Shape out = broadcast_shapes({a, b});
    std::vector<int64_t> got_a(static_cast<size_t>(shape_numel(out))), got_b(got_a.size());
    for_each_broadcast_run(out, {a, b}, [&](int64_t out_offset, const int64_t* in, const BroadcastRuns& runs) {
      for (int64_t i = 0; i < runs.run_length(); ++i) {
        got_a[static_cast<size_t>(out_offset + i)] = in[0] + i * runs.step(0);
        got_b[static_cast<size_t>(out_offset + i)] = in[1] + i * runs.step(1);
      }
    });
    EXPECT_EQ(got_a, reference_offsets(out, a)) << shape_str(a) << " vs " << shape_str(b);
    EXPECT_EQ(got_b, reference_offsets(out, b)) << shape_str(a) << " vs " << shape_str(b);
  }
}
