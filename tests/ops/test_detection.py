#!/usr/bin/env python3
"""Detection and data-rearranging ops against onnxruntime (onnx's reference where onnxruntime 1.22 lacks
the op or its opset): NonMaxSuppression (both box formats, thresholds, NaN scores, limits, empty), Unique
(sorted or not, axes, NaN), Col2Im, CenterCropPad, RoiAlign, DeformConv, MaxUnpool, ReverseSequence,
TensorScatter, with negative axes, empty tensors and refused inputs."""

from __future__ import annotations

import sys

import numpy as np

from op_oracle import case, main

rng = np.random.default_rng(5)


def i64(*v):
    return np.array(v, np.int64)


def f32(shape):
    return rng.standard_normal(shape).astype(np.float32)


def nms_inputs(batches=2, classes=3, count=12):
    corners = rng.uniform(0, 10, (batches, count, 2)).astype(np.float32)
    sizes = rng.uniform(1, 5, (batches, count, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + sizes], axis=2)
    scores = rng.uniform(0, 1, (batches, classes, count)).astype(np.float32)
    return boxes, scores


def cases():
    boxes, scores = nms_inputs()
    for center in (0, 1):
        for iou in (0.0, 0.3, 0.7):
            yield case(f"nms_center{center}_iou{iou}", "NonMaxSuppression",
                       {"boxes": boxes, "scores": scores, "max": i64(5), "iou": np.array([iou], np.float32)},
                       ["selected"], center_point_box=center)
    yield case("nms_score_threshold", "NonMaxSuppression",
               {"boxes": boxes, "scores": scores, "max": i64(100), "iou": np.array([0.5], np.float32),
                "score": np.array([0.4], np.float32)}, ["selected"])
    flipped = boxes[..., [2, 3, 0, 1]].copy()
    yield case("nms_flipped_corners", "NonMaxSuppression",
               {"boxes": flipped, "scores": scores, "max": i64(3), "iou": np.array([0.4], np.float32)}, ["selected"])
    nan_scores = scores.copy()
    nan_scores[0, 1, ::3] = np.nan
    yield case("nms_nan_scores_threshold", "NonMaxSuppression",
               {"boxes": boxes, "scores": nan_scores, "max": i64(4), "iou": np.array([0.5], np.float32),
                "score": np.array([0.1], np.float32)}, ["selected"])
    yield case("nms_no_max_selects_nothing", "NonMaxSuppression", {"boxes": boxes, "scores": scores}, ["selected"])
    yield case("nms_no_boxes", "NonMaxSuppression",
               {"boxes": np.zeros((1, 0, 4), np.float32), "scores": np.zeros((1, 2, 0), np.float32), "max": i64(3)},
               ["selected"])
    ints = np.array([[3, 1, 3], [2, 1, 2], [3, 1, 3], [0, 0, 0]], np.int64)
    fl = np.array([2.0, np.nan, -1.0, 2.0, np.nan, 0.0, -0.0, 5.0], np.float32)
    for sorted_ in (0, 1):
        yield case(f"unique_flat_sorted{sorted_}", "Unique", {"x": fl}, ["y", "indices", "inverse", "counts"],
                   sorted=sorted_, reference="onnx-ref")
        for axis in (0, 1, -1):
            yield case(f"unique_axis{axis}_sorted{sorted_}", "Unique", {"x": ints}, ["y", "indices", "inverse", "counts"],
                       sorted=sorted_, axis=axis)
    yield case("unique_3d_axis", "Unique", {"x": rng.integers(0, 2, (2, 4, 2)).astype(np.float32)},
               ["y", "indices", "inverse", "counts"], axis=1)
    yield case("unique_empty", "Unique", {"x": np.zeros((0,), np.float32)}, ["y", "indices", "inverse", "counts"])
    col = f32((2, 3 * 4, 9))
    yield case("col2im_basic", "Col2Im", {"x": col, "image": i64(4, 4), "block": i64(2, 2)}, ["y"])
    yield case("col2im_strided_padded_dilated", "Col2Im",
               {"x": f32((1, 2 * 4, 9)), "image": i64(5, 5), "block": i64(2, 2)}, ["y"],
               strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1])
    yield case("col2im_dilated", "Col2Im", {"x": f32((1, 4, 9)), "image": i64(5, 5), "block": i64(2, 2)}, ["y"],
               dilations=[2, 2])
    img = f32((3, 6, 5))
    for label, shape, axes in (("crop_pad", i64(4, 8), [1, 2]), ("negative_axes", i64(3, 2), [-2, -1]),
                               ("all_axes", i64(2, 7, 5), None), ("odd", i64(5, 2), [1, 2])):
        attrs = {"axes": axes} if axes is not None else {}
        yield case(f"center_crop_pad_{label}", "CenterCropPad", {"x": img, "shape": shape}, ["y"], opset=18, **attrs)
    yield case("center_crop_pad_int", "CenterCropPad", {"x": np.arange(12, dtype=np.int32).reshape(3, 4), "shape": i64(5, 1)},
               ["y"], opset=18)
    x = f32((2, 3, 10, 8))
    rois = np.array([[0, 0, 7, 7], [1.5, 2.2, 6.1, 9.3], [3, 1, 3.5, 2], [-2, -1, 4, 4]], np.float32)
    batch = i64(0, 1, 1, 0)
    for mode in ("avg", "max"):
        for transform in ("half_pixel", "output_half_pixel"):
            yield case(f"roialign_{mode}_{transform}", "RoiAlign", {"x": x, "rois": rois, "batch": batch}, ["y"],
                       mode=mode, coordinate_transformation_mode=transform, output_height=3, output_width=4,
                       sampling_ratio=2, spatial_scale=0.8, rtol=1e-4, atol=1e-5)
    yield case("roialign_adaptive", "RoiAlign", {"x": x, "rois": rois, "batch": batch}, ["y"], output_height=2,
               output_width=2, rtol=1e-4, atol=1e-5)
    dx = f32((1, 4, 5, 5))
    dw = f32((6, 2, 3, 3))
    off = (rng.standard_normal((1, 2 * 9 * 2, 3, 3)) * 1.5).astype(np.float32)
    mask = rng.uniform(0, 1, (1, 2 * 9, 3, 3)).astype(np.float32)
    yield case("deform_conv_groups_mask_bias", "DeformConv",
               {"x": dx, "w": dw, "offset": off, "b": f32((6,)), "mask": mask}, ["y"], opset=22, group=2,
               offset_group=2, rtol=1e-4, atol=1e-5, reference="onnx-ref")
    off2 = (rng.standard_normal((1, 18, 3, 3)) * 2).astype(np.float32)
    yield case("deform_conv_strided_padded", "DeformConv", {"x": f32((1, 1, 6, 6)), "w": f32((2, 1, 3, 3)), "offset": off2},
               ["y"], opset=22, strides=[2, 2], pads=[1, 1, 1, 1], rtol=1e-4, atol=1e-5, reference="onnx-ref")
    px = f32((1, 2, 2, 2))
    idx = np.array([[[[5, 7], [13, 15]], [[16, 19], [25, 30]]]], np.int64)
    yield case("maxunpool", "MaxUnpool", {"x": px, "i": idx}, ["y"], kernel_shape=[2, 2], strides=[2, 2])
    # With output_shape, onnxruntime (as PyTorch) reads the indices in the output's shape, onnx's reference and
    # its node test in the unpooled shape placed at the output's start: mpaudit follows the reference.
    yield case("maxunpool_output_shape", "MaxUnpool", {"x": px, "i": idx, "shape": i64(1, 2, 5, 5)}, ["y"],
               kernel_shape=[2, 2], strides=[2, 2], reference="onnx-ref")
    seq = f32((4, 3, 2))
    yield case("reverse_sequence_time0", "ReverseSequence", {"x": seq, "lens": i64(4, 1, 2)}, ["y"],
               batch_axis=1, time_axis=0)
    yield case("reverse_sequence_batch0", "ReverseSequence", {"x": np.arange(12, dtype=np.int64).reshape(3, 4),
                                                              "lens": i64(1, 4, 3)}, ["y"], batch_axis=0, time_axis=1)
    cache = f32((2, 3, 6, 4))
    update = f32((2, 3, 2, 4))
    yield case("tensor_scatter_linear", "TensorScatter", {"cache": cache, "update": update, "w": i64(1, 4)}, ["y"],
               opset=24, reference="onnx-ref")
    yield case("tensor_scatter_circular_negative_axis", "TensorScatter", {"cache": cache, "update": update, "w": i64(5, 2)},
               ["y"], opset=24, mode="circular", axis=-2, reference="onnx-ref")
    yield case("tensor_scatter_no_indices_axis1", "TensorScatter", {"cache": f32((2, 5, 3)), "update": f32((2, 2, 3))},
               ["y"], opset=24, axis=1, reference="onnx-ref")


def extra(oracle) -> None:
    boxes, scores = nms_inputs(1, 1, 4)
    oracle.expect_error(case("nms_bad_scores", "NonMaxSuppression", {"boxes": boxes, "scores": scores[:, :, :3],
                                                                      "max": i64(2)}, ["selected"]),
                        "do not match boxes")
    oracle.expect_error(case("tensor_scatter_overflow", "TensorScatter",
                             {"cache": f32((1, 4, 2)), "update": f32((1, 3, 2)), "w": i64(2)}, ["y"], opset=24, axis=1),
                        "leaves a cache of 4")
    oracle.expect_error(case("reverse_sequence_bad_length", "ReverseSequence", {"x": f32((3, 2)), "lens": i64(4, 1)}, ["y"]),
                        "sequence length 4 is outside [0, 3]")


if __name__ == "__main__":
    sys.exit(main("detection and rearranging ops", cases, extra))
