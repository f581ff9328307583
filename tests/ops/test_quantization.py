#!/usr/bin/env python3
"""Quantization and the narrow element types against onnxruntime (uint8/int8 paths; its Python API returns
no float8 arrays) or onnx's reference (int4/int2/float4/E8M0, blocked scales, opsets onnxruntime 1.22 lacks):
QuantizeLinear / DequantizeLinear per tensor, per axis (negative axes), blocked, output_dtype, precision,
saturate; Cast and CastLike among the new types with NaN, Inf and saturation; QLinearMatMul, MatMulInteger,
ConvInteger, QLinearConv, DynamicQuantizeLinear, BitCast; empty tensors; refused cases. Narrow-typed
operands are initializers: numpy's .npz cannot hold ml_dtypes' types."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
from onnx import TensorProto

from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_25
from onnx.reference.ops.op_quantize_linear import QuantizeLinear_25

from op_oracle import case, main

EXACT = {"rtol": 0.0, "atol": 0.0}


# onnx 1.22's reference implements QuantizeLinear/DequantizeLinear 25 (precision, DequantizeLinear's
# output_dtype) but registers only version 21.
class QuantizeLinear(QuantizeLinear_25):
    op_domain = ""


class DequantizeLinear(DequantizeLinear_25):
    op_domain = ""


LATEST_QDQ = (QuantizeLinear, DequantizeLinear)


def specials(x: np.ndarray, huge: bool = True) -> np.ndarray:
    """x with NaN, ±0, tiny values and (huge) ±Inf, ±1e9 in front."""
    edge = [np.nan, -np.nan, 0.0, -0.0, 1e-9, -1e-9] + ([np.inf, -np.inf, 1e9, -1e9] if huge else [])
    return np.concatenate([np.array(edge, np.float32), x.ravel()]).astype(np.float32)


def quantize_cases(rng):
    x = (rng.standard_normal((3, 4, 5)) * 4).astype(np.float32)
    x[0, 0, :3] = [2.5, -2.5, 3.5]  # ties: to even
    s = np.float32(0.5)
    yield case("q_uint8_tensor", "QuantizeLinear", {"x": x}, ["y"],
               initializers={"s": np.array(s), "z": np.array(128, np.uint8)})
    yield case("q_int8_no_zero_point_is_uint8", "QuantizeLinear", {"x": np.abs(x)}, ["y"],
               initializers={"s": np.array(s)})
    yield case("q_int8_axis1", "QuantizeLinear", {"x": x}, ["y"], axis=1,
               initializers={"s": np.array([0.1, 0.2, 0.5, 1.0], np.float32), "z": np.array([0, -3, 5, 127], np.int8)})
    yield case("q_int8_axis_negative", "QuantizeLinear", {"x": x}, ["y"], axis=-1,
               initializers={"s": np.linspace(0.1, 1, 5).astype(np.float32), "z": np.zeros(5, np.int8)})
    yield case("q_uint16_int16", "QuantizeLinear", {"x": x * 1000}, ["y"],
               initializers={"s": np.array(0.25, np.float32), "z": np.array(-7, np.int16)})
    yield case("q_empty", "QuantizeLinear", {"x": np.zeros((0, 3), np.float32)}, ["y"],
               initializers={"s": np.array(s), "z": np.array(3, np.uint8)})
    # Out of range saturates (the spec; onnx's reference wraps through int32 there, onnxruntime saturates);
    # NaN gives the type's minimum, as in onnx's reference (onnxruntime leaves it undefined).
    xs, x_finite = specials(x), specials(x, huge=False)
    yield case("q_int8_saturates", "QuantizeLinear", {"x": xs[2:]}, ["y"],
               initializers={"s": np.array(0.1, np.float32), "z": np.array(-5, np.int8)})
    yield case("q_int8_nan", "QuantizeLinear", {"x": x_finite}, ["y"], reference="onnx-ref", opset=21,
               initializers={"s": np.array(0.1, np.float32), "z": np.array(0, np.int8)})
    # Blocked: the scale has x's shape with axis 1 cut in blocks of 2 (the last block short: 5 = 2+2+1).
    xb = (rng.standard_normal((2, 5, 3)) * 3).astype(np.float32)
    sb = rng.uniform(0.1, 1, (2, 3, 3)).astype(np.float32)
    yield case("q_blocked_uint8", "QuantizeLinear", {"x": xb}, ["y"], axis=1, block_size=2, reference="onnx-ref",
               initializers={"s": sb, "z": rng.integers(0, 255, (2, 3, 3)).astype(np.uint8)})
    for name, t in (("int4", ml_dtypes.int4), ("uint4", ml_dtypes.uint4)):
        yield case(f"q_blocked_{name}", "QuantizeLinear", {"x": xb}, ["y"], axis=-2, block_size=2,
                   reference="onnx-ref", initializers={"s": sb, "z": np.ones((2, 3, 3), t)})
    for name, t in (("int2", ml_dtypes.int2), ("uint2", ml_dtypes.uint2)):
        yield case(f"q_{name}", "QuantizeLinear", {"x": x_finite}, ["y"], opset=25, reference="onnx-ref",
                   initializers={"s": np.array(0.7, np.float32), "z": np.array(1, t)})
    yield case("q_output_dtype_int4", "QuantizeLinear", {"x": x}, ["y"], output_dtype=TensorProto.INT4,
               reference="onnx-ref", inputs=["x", "s"], initializers={"s": np.array(0.5, np.float32)})
    for name, t in (("e4m3fn", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2),
                    ("e4m3fnuz", ml_dtypes.float8_e4m3fnuz), ("e5m2fnuz", ml_dtypes.float8_e5m2fnuz)):
        for saturate in (1, 0):
            yield case(f"q_{name}_saturate{saturate}", "QuantizeLinear", {"x": xs * 40}, ["y"], saturate=saturate,
                       reference="onnx-ref", initializers={"s": np.array(0.5, np.float32), "z": np.zeros((), t)},
                       **EXACT)
    yield case("q_float4", "QuantizeLinear", {"x": xs}, ["y"], opset=23, reference="onnx-ref",
               initializers={"s": np.array(0.5, np.float32), "z": np.zeros((), ml_dtypes.float4_e2m1fn)}, **EXACT)
    # precision: x and the scale rounded to float16 and divided there.
    yield case("q_precision_float16", "QuantizeLinear", {"x": x * 3.3}, ["y"], opset=25, reference="onnx-ref",
               precision=TensorProto.FLOAT16, reference_ops=LATEST_QDQ,
               initializers={"s": np.array(0.3, np.float32), "z": np.array(0, np.int8)})
    # A float16 scale divides in float16 (the spec; onnxruntime divides in float32).
    yield case("q_float16_input_scale", "QuantizeLinear", {"x": (x * 7).astype(np.float16)}, ["y"], opset=21,
               reference="onnx-ref",
               initializers={"s": np.array(0.3, np.float16), "z": np.array(0, np.int8)})


def dequantize_cases(rng):
    q8 = rng.integers(-128, 128, (3, 4, 5)).astype(np.int8)
    yield case("dq_int8_tensor", "DequantizeLinear", {"x": q8}, ["y"],
               initializers={"s": np.array(0.05, np.float32), "z": np.array(-3, np.int8)})
    yield case("dq_uint8_axis_negative", "DequantizeLinear",
               {"x": rng.integers(0, 256, (2, 3, 4)).astype(np.uint8)}, ["y"], axis=-2,
               initializers={"s": np.array([0.1, 0.2, 0.3], np.float32), "z": np.array([0, 128, 255], np.uint8)})
    yield case("dq_int32", "DequantizeLinear", {"x": rng.integers(-10**6, 10**6, (7,)).astype(np.int32)}, ["y"],
               initializers={"s": np.array(1e-3, np.float32)})
    yield case("dq_float16_scale", "DequantizeLinear", {"x": q8}, ["y"],
               initializers={"s": np.array(0.01, np.float16), "z": np.array(2, np.int8)})
    yield case("dq_empty", "DequantizeLinear", {"x": np.zeros((2, 0), np.uint8)}, ["y"],
               initializers={"s": np.array(0.5, np.float32)})
    sb = rng.uniform(0.1, 1, (3, 2, 5)).astype(np.float32)
    yield case("dq_blocked_int4", "DequantizeLinear", {}, ["y"], axis=1, block_size=3, reference="onnx-ref",
               inputs=["x", "s", "z"], initializers={"x": rng.integers(-8, 8, (3, 4, 5)).astype(ml_dtypes.int4),
                                                     "s": sb, "z": rng.integers(-8, 8, (3, 2, 5)).astype(ml_dtypes.int4)})
    for name, t, lo, hi in (("uint4", ml_dtypes.uint4, 0, 16), ("int2", ml_dtypes.int2, -2, 2),
                            ("uint2", ml_dtypes.uint2, 0, 4)):
        yield case(f"dq_{name}", "DequantizeLinear", {}, ["y"], opset=25, reference="onnx-ref", inputs=["x", "s", "z"],
                   initializers={"x": rng.integers(lo, hi, (3, 5)).astype(t), "s": np.array(0.25, np.float32),
                                 "z": np.array(1, t)})
    codes = np.arange(256, dtype=np.uint8)
    for name, t in (("e4m3fn", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2),
                    ("e4m3fnuz", ml_dtypes.float8_e4m3fnuz), ("e5m2fnuz", ml_dtypes.float8_e5m2fnuz)):
        yield case(f"dq_{name}_every_code", "DequantizeLinear", {}, ["y"], reference="onnx-ref", inputs=["x", "s"],
                   initializers={"x": codes.view(t), "s": np.array(2.0, np.float32)}, **EXACT)
    yield case("dq_float4_output_float16", "DequantizeLinear", {}, ["y"], opset=25, reference="onnx-ref",
               output_dtype=TensorProto.FLOAT16, inputs=["x", "s"], reference_ops=LATEST_QDQ,
               initializers={"x": (codes[:16] & 0xF).view(ml_dtypes.float4_e2m1fn), "s": np.array(3.0, np.float32)})


def cast_cases(rng):
    x = specials(rng.standard_normal(40).astype(np.float32) * 100)
    x = np.concatenate([x, [448, 449, 464, 465, 480, 57344, 61440, 1e-3, 240, 241, 6, 7, 0.25, 0.75]]).astype(np.float32)
    floats = {"FLOAT8E4M3FN": ml_dtypes.float8_e4m3fn, "FLOAT8E5M2": ml_dtypes.float8_e5m2,
              "FLOAT8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz, "FLOAT8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz}
    for name, t in floats.items():
        to = getattr(TensorProto, name)
        for saturate in (1, 0):
            for src in (np.float32, np.float16):
                yield case(f"cast_{np.dtype(src).name}_to_{name}_sat{saturate}", "Cast", {"x": x.astype(src)}, ["y"],
                           to=to, saturate=saturate, reference="onnx-ref", **EXACT)
        yield case(f"cast_{name}_to_float", "Cast", {}, ["y"], to=TensorProto.FLOAT, reference="onnx-ref",
                   inputs=["x"], initializers={"x": np.arange(256, dtype=np.uint8).view(t)}, **EXACT)
        yield case(f"castlike_float_to_{name}", "CastLike", {"x": x}, ["y"], reference="onnx-ref", inputs=["x", "like"],
                   initializers={"like": np.zeros(1, t)}, **EXACT)
    yield case("cast_float_to_float4", "Cast", {"x": x}, ["y"], to=TensorProto.FLOAT4E2M1, opset=23,
               reference="onnx-ref", **EXACT)
    yield case("cast_float4_to_float16", "Cast", {}, ["y"], to=TensorProto.FLOAT16, opset=23, reference="onnx-ref",
               inputs=["x"], initializers={"x": np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn)}, **EXACT)
    e8 = np.abs(x[np.isfinite(x)])
    e8 = np.concatenate([e8, [0.75, 1.5, 3.0, 2.0**-127, 2.0**127 * 1.5, np.nan, np.inf]]).astype(np.float32)
    for mode in ("up", "down", "nearest"):
        for saturate in (1, 0):
            yield case(f"cast_float_to_e8m0_{mode}_sat{saturate}", "Cast", {"x": e8}, ["y"], opset=25,
                       to=TensorProto.FLOAT8E8M0, round_mode=mode, saturate=saturate, reference="onnx-ref", **EXACT)
    yield case("cast_e8m0_to_float", "Cast", {}, ["y"], to=TensorProto.FLOAT, opset=25, reference="onnx-ref",
               inputs=["x"], initializers={"x": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)}, **EXACT)
    ints = np.array([-300, -9, -8, -3, -2, -1, 0, 1, 2, 3, 7, 8, 15, 16, 17, 300], np.float32)
    for name in ("INT4", "UINT4", "INT2", "UINT2"):
        yield case(f"cast_float_to_{name}", "Cast", {"x": np.concatenate([ints, [2.7, -2.7, np.nan]]).astype(np.float32)},
                   ["y"], to=getattr(TensorProto, name), opset=25, reference="onnx-ref")
        yield case(f"cast_int64_to_{name}", "Cast", {"x": ints.astype(np.int64)}, ["y"], to=getattr(TensorProto, name),
                   opset=25, reference="onnx-ref")
    for name, t, lo, hi in (("int4", ml_dtypes.int4, -8, 8), ("uint2", ml_dtypes.uint2, 0, 4)):
        values = np.arange(lo, hi).astype(t)
        for to in ("FLOAT", "INT8", "UINT8", "BOOL", "FLOAT16"):
            yield case(f"cast_{name}_to_{to}", "Cast", {}, ["y"], to=getattr(TensorProto, to), opset=25,
                       reference="onnx-ref", inputs=["x"], initializers={"x": values})
    yield case("cast_empty_to_float8", "Cast", {"x": np.zeros((0, 2), np.float32)}, ["y"], opset=21,
               to=TensorProto.FLOAT8E4M3FN, reference="onnx-ref")


def integer_cases(rng):
    a8 = rng.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    b8 = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    au = rng.integers(0, 256, (3, 4)).astype(np.uint8)
    bu = rng.integers(0, 256, (4, 6)).astype(np.uint8)
    yield case("matmulinteger_uint8", "MatMulInteger", {"a": au, "b": bu}, ["y"], opset=10,
               initializers={"az": np.array(12, np.uint8), "bz": np.array(200, np.uint8)})
    yield case("matmulinteger_int8_broadcast_per_column", "MatMulInteger", {"a": a8, "b": b8}, ["y"], opset=10,
               inputs=["a", "b", "", "bz"], initializers={"bz": rng.integers(-5, 5, 5).astype(np.int8)})
    yield case("matmulinteger_empty", "MatMulInteger", {"a": np.zeros((0, 4), np.uint8), "b": bu}, ["y"], opset=10)
    for zt, lo, hi in ((np.uint8, 0, 256), (np.int8, -128, 128)):
        a = rng.integers(lo, hi, (2, 3, 4)).astype(zt)
        b = rng.integers(lo, hi, (4, 3)).astype(zt)
        for st in (np.float32,):
            yield case(f"qlinearmatmul_{np.dtype(zt).name}", "QLinearMatMul", {"a": a, "b": b}, ["y"], opset=21,
                       inputs=["a", "sa", "za", "b", "sb", "zb", "sy", "zy"],
                       initializers={"sa": np.array(0.02, st), "za": np.array(lo + 3, zt), "sb": np.array(0.05, st),
                                     "zb": np.array(lo + 100, zt), "sy": np.array(0.3, st), "zy": np.array(lo + 50, zt)})
    x = rng.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 256, (4, 1, 3, 3)).astype(np.uint8)
    yield case("convinteger_group_pads", "ConvInteger", {"x": x, "w": w}, ["y"], opset=10, group=2,
               pads=[1, 1, 1, 1], strides=[2, 1], initializers={"xz": np.array(7, np.uint8), "wz": np.array(100, np.uint8)})
    w8 = rng.integers(-128, 128, (3, 2, 2, 2)).astype(np.int8)
    x8 = rng.integers(0, 256, (2, 2, 4, 4)).astype(np.uint8)
    yield case("qlinearconv_per_channel_bias", "QLinearConv", {"x": x8}, ["y"], opset=10, dilations=[1, 2],
               inputs=["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"],
               initializers={"sx": np.array(0.02, np.float32), "zx": np.array(128, np.uint8), "w": w8,
                             "sw": np.array([0.01, 0.02, 0.03], np.float32), "zw": np.zeros(3, np.int8),
                             "sy": np.array(0.1, np.float32), "zy": np.array(120, np.uint8),
                             "b": np.array([-500, 0, 700], np.int32)})
    for name, x in (("mixed", (rng.standard_normal((3, 7)) * 5).astype(np.float32)),
                    ("positive", rng.uniform(1, 4, (10,)).astype(np.float32)),
                    ("negative", -rng.uniform(1, 4, (2, 5)).astype(np.float32)),
                    ("zeros", np.zeros((4,), np.float32))):
        yield case(f"dynamicquantizelinear_{name}", "DynamicQuantizeLinear", {"x": x}, ["y", "scale", "zero"], opset=11)
    bits = np.array([1.5, -0.0, np.nan, np.inf, 3e38], np.float32)
    yield case("bitcast_float_to_int32", "BitCast", {"x": bits}, ["y"], opset=26, to=TensorProto.INT32,
               reference="onnx-ref")
    yield case("bitcast_int4_to_uint4", "BitCast", {}, ["y"], opset=26, to=TensorProto.UINT4, reference="onnx-ref",
               inputs=["x"], initializers={"x": np.arange(-8, 8).astype(ml_dtypes.int4)})
    yield case("bitcast_uint8_to_float8", "BitCast", {}, ["y"], opset=26, to=TensorProto.FLOAT8E5M2,
               reference="onnx-ref", inputs=["x"], initializers={"x": np.arange(256, dtype=np.uint8)}, **EXACT)


def cases():
    rng = np.random.default_rng(23)
    yield from quantize_cases(rng)
    yield from dequantize_cases(rng)
    yield from cast_cases(rng)
    yield from integer_cases(rng)


def refused(oracle):
    x = np.ones((2, 3), np.float32)
    oracle.expect_error(case("q_per_axis_wrong_length", "QuantizeLinear", {"x": x}, ["y"], axis=1,
                             initializers={"s": np.ones(2, np.float32)}), "QuantizeLinear")
    oracle.expect_error(case("q_blocked_bad_blocks", "QuantizeLinear", {"x": x}, ["y"], axis=1, block_size=1,
                             initializers={"s": np.ones((2, 1), np.float32)}), "blocks of 1")
    oracle.expect_error(case("bitcast_width_mismatch", "BitCast", {"x": x}, ["y"], opset=26, to=TensorProto.INT64,
                             reference="onnx-ref"), "BitCast")
    # Only the conversion ops compute on narrow types: another op refuses them as unsupported.
    oracle.expect_error(case("add_float8_unsupported", "Add", {}, ["y"], inputs=["a", "a"],
                             initializers={"a": np.ones(3, ml_dtypes.float8_e4m3fn)}), "float8e4m3fn")


if __name__ == "__main__":
    sys.exit(main("quantization and narrow types", cases, refused))
