#!/usr/bin/env python3
"""CumSum against onnxruntime and CumProd (opset 26, which onnxruntime 1.22 lacks) against onnx's reference:
both directions, exclusive, negative axes, NaN, empty tensors, integers."""

from __future__ import annotations

import sys

import numpy as np

from op_oracle import case, main


def cases():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x_nan = x.copy()
    x_nan[1, 2, 0] = np.nan
    for axis in (0, -1, 1):
        for exclusive in (0, 1):
            for reverse in (0, 1):
                yield case(f"cumsum_axis{axis}_ex{exclusive}_rev{reverse}", "CumSum",
                           {"x": x, "axis": np.array(axis, np.int64)}, ["y"], exclusive=exclusive, reverse=reverse)
    yield case("cumsum_nan", "CumSum", {"x": x_nan, "axis": np.array(-1, np.int32)}, ["y"])
    yield case("cumsum_int64", "CumSum", {"x": np.arange(-6, 6, dtype=np.int64).reshape(3, 4),
                                          "axis": np.array(1, np.int64)}, ["y"], reverse=1)
    yield case("cumsum_empty", "CumSum", {"x": np.zeros((0, 3), np.float32), "axis": np.array(1, np.int64)}, ["y"])
    p = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    p[2, 1, 3] = np.nan
    for axis in (0, -1):
        for exclusive in (0, 1):
            for reverse in (0, 1):
                yield case(f"cumprod_axis{axis}_ex{exclusive}_rev{reverse}", "CumProd",
                           {"x": p, "axis": np.array(axis, np.int64)}, ["y"], opset=26, reference="onnx-ref",
                           exclusive=exclusive, reverse=reverse)
    yield case("cumprod_int32_wraps", "CumProd", {"x": np.full((2, 40), 3, np.int32), "axis": np.array(1, np.int32)},
               ["y"], opset=26, reference="onnx-ref")
    yield case("cumprod_double", "CumProd", {"x": p.astype(np.float64), "axis": np.array(1, np.int64)}, ["y"],
               opset=26, reference="onnx-ref", reverse=1)
    yield case("cumprod_empty", "CumProd", {"x": np.zeros((2, 0), np.float32), "axis": np.array(-1, np.int64)}, ["y"],
               opset=26, reference="onnx-ref")


if __name__ == "__main__":
    sys.exit(main("cumulative ops", cases))
