#!/usr/bin/env python3
"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against onnxruntime: every reduction, weights,
ignore_index (negative, on every element), N-d inputs, the log_prob output, NaN, empty batches, and a
target out of range refused."""

from __future__ import annotations

import sys

import numpy as np

from op_oracle import case, main


def cases():
    rng = np.random.default_rng(11)
    x2 = rng.standard_normal((5, 4)).astype(np.float32)
    t2 = np.array([0, 3, 1, 2, 3], np.int64)
    x4 = rng.standard_normal((2, 4, 3, 2)).astype(np.float32)
    t4 = rng.integers(0, 4, (2, 3, 2)).astype(np.int64)
    t4_ii = t4.copy()
    t4_ii[0, 1, 0] = -1
    w = rng.uniform(0.2, 2.0, 4).astype(np.float32)
    for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"):
        short = "nll" if op.startswith("Neg") else "sce"
        outputs = ["loss"] if short == "nll" else ["loss", "log_prob"]
        for reduction in ("none", "sum", "mean"):
            yield case(f"{short}_2d_{reduction}", op, {"x": x2, "t": t2}, outputs, opset=13, reduction=reduction)
            yield case(f"{short}_4d_weight_{reduction}", op, {"x": x4, "t": t4, "w": w}, outputs, opset=13,
                       reduction=reduction)
            yield case(f"{short}_4d_negative_ii_{reduction}", op, {"x": x4, "t": t4_ii, "w": w}, outputs, opset=13,
                       reduction=reduction, ignore_index=-1)
        yield case(f"{short}_int32_target", op, {"x": x4, "t": t4.astype(np.int32)}, outputs, opset=13,
                   reduction="sum", ignore_index=2)
        for reduction in ("sum", "mean"):  # mean divides 0 by 0: NaN
            yield case(f"{short}_all_ignored_{reduction}", op, {"x": x2, "t": np.full(5, 7, np.int64)}, outputs,
                       opset=13, reduction=reduction, ignore_index=7)
        x_nan = x2.copy()
        x_nan[1, 3] = np.nan
        yield case(f"{short}_nan", op, {"x": x_nan, "t": t2}, outputs, opset=13, reduction="none")
        yield case(f"{short}_double_mean_weight", op, {"x": x4.astype(np.float64), "t": t4,
                                                       "w": w.astype(np.float64)}, outputs, opset=13)
    yield case("nll_empty_none", "NegativeLogLikelihoodLoss", {"x": np.zeros((0, 4), np.float32),
                                                               "t": np.zeros(0, np.int64)}, ["loss"], opset=13,
               reduction="none")
    # Only the loss output requested.
    yield case("sce_loss_only", "SoftmaxCrossEntropyLoss", {"x": x4, "t": t4}, ["loss"], opset=13)
    # Opset 22 NegativeLogLikelihoodLoss (the ONNX reference: onnxruntime 1.22 registers it up to 13).
    yield case("nll_opset22_mean_weight", "NegativeLogLikelihoodLoss", {"x": x4, "t": t4, "w": w}, ["loss"],
               opset=22, reference="onnx-ref")


def refusals(oracle):
    oracle.expect_error(case("nll_target_out_of_range", "NegativeLogLikelihoodLoss",
                             {"x": np.zeros((2, 3), np.float32), "t": np.array([0, 3], np.int64)}, ["loss"],
                             opset=13), "outside [0, 3)")
    oracle.expect_error(case("sce_target_shape", "SoftmaxCrossEntropyLoss",
                             {"x": np.zeros((2, 3, 4), np.float32), "t": np.zeros((2, 3), np.int64)}, ["loss"],
                             opset=13), "SoftmaxCrossEntropyLoss")


if __name__ == "__main__":
    sys.exit(main("loss ops", cases, refusals))
