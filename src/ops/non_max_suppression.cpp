// NonMaxSuppression (10, 11): per batch and class, greedily keeps the highest-scoring boxes whose overlap
// (IoU) with every box kept before stays at or below iou_threshold, as ONNX Runtime does: candidates are
// the boxes scoring above score_threshold (every box without one), taken by score, ties by box index; a NaN
// score is never a candidate. Outputs [batch, class, box] triples in that order.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/shape_helpers.h"

namespace mpa {

namespace {

struct Corners {
  float y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
};

Corners corners_of(const float* b, bool center_point) {
  if (center_point) {
    const float xc = b[0], yc = b[1], w = b[2], h = b[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

bool overlaps_too_much(const Corners& a, const Corners& b, float iou_threshold) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return false;
  const float intersection = ih * iw;
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  const float union_area = area_a + area_b - intersection;
  if (area_a <= 0 || area_b <= 0 || union_area <= 0) return false;
  return intersection / union_area > iou_threshold;
}

class NonMaxSuppressionOp : public OpKernel {
 public:
  explicit NonMaxSuppressionOp(const OpInit& init) : center_point_(init.get_int("center_point_box", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    if (!dtype_is_float(boxes.dtype()) || !dtype_is_float(scores.dtype()))
      fail(node.label() + ": boxes and scores must be floating-point");
    if (boxes.rank() != 3 || boxes.dim(2) != 4)
      fail(node.label() + ": boxes must be [batch, boxes, 4], got " + shape_str(boxes.shape()));
    if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
      fail(node.label() + ": scores " + shape_str(scores.shape()) + " do not match boxes " + shape_str(boxes.shape()));
    const int64_t max_per_class = ctx.has_input(2) ? scalar_int(node, ctx.input(2), "max_output_boxes_per_class") : 0;
    const float iou_threshold = ctx.has_input(3) ? scalar_float(node, ctx.input(3), "iou_threshold") : 0.0f;
    const bool has_score_threshold = ctx.has_input(4);
    const float score_threshold = has_score_threshold ? scalar_float(node, ctx.input(4), "score_threshold") : 0.0f;
    if (iou_threshold < 0 || iou_threshold > 1)
      fail(node.label() + ": iou_threshold " + std::to_string(iou_threshold) + " is outside [0, 1]");
    const int64_t batches = boxes.dim(0), count = boxes.dim(1), classes = scores.dim(1);
    // In float, as ONNX Runtime computes (16-bit inputs widen exactly).
    const std::vector<double> box_values = boxes.to_double_vector(), score_values = scores.to_double_vector();
    const std::vector<float> box_data(box_values.begin(), box_values.end()),
        score_data(score_values.begin(), score_values.end());
    std::vector<int64_t> selected;  // flat (batch, class, box) triples
    for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
      std::vector<Corners> corners(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i)
        corners[size_t(i)] = corners_of(box_data.data() + (b * count + i) * 4, center_point_);
      for (int64_t c = 0; c < classes; ++c) {
        const float* s = score_data.data() + (b * classes + c) * count;
        std::vector<int64_t> candidates;
        for (int64_t i = 0; i < count; ++i)
          if (!std::isnan(s[i]) && (!has_score_threshold || s[i] > score_threshold)) candidates.push_back(i);
        std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
        std::vector<int64_t> kept;
        for (int64_t i : candidates) {
          if (int64_t(kept.size()) >= max_per_class) break;
          const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
            return overlaps_too_much(corners[size_t(k)], corners[size_t(i)], iou_threshold);
          });
          if (!suppressed) kept.push_back(i);
        }
        for (int64_t k : kept) selected.insert(selected.end(), {b, c, k});
      }
    }
    Tensor& out = allocate_checked(ctx, 0, DType::Int64, {int64_t(selected.size() / 3), 3});
    std::copy(selected.begin(), selected.end(), out.data<int64_t>());
  }

 private:
  static float scalar_float(const Node& node, const Tensor& t, const char* what) {
    if (t.numel() != 1) fail(node.label() + ": " + what + " must hold one value, got " + shape_str(t.shape()));
    return static_cast<float>(t.to_double_vector()[0]);
  }
  bool center_point_;
};

}  // namespace

// Outputs indices: no float output, nothing rounds.
MPA_OP_TRAITS("", "NonMaxSuppression", {.precision = PrecisionClass::Exact, .host_inputs = {2, 3, 4}});
MPA_REGISTER_OP("", "NonMaxSuppression", NonMaxSuppressionOp, 10, 11);

}  // namespace mpa
