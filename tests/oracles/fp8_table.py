"""Reference FP8 conversions from ONNX's own Cast reference implementation (onnx.reference, which uses
ml_dtypes), written to stdout as little-endian binary for tests/exhaustive/test_formats_exhaustive.cpp:

  float32[256]  E4M3FN code -> float, codes 0..255
  float32[256]  E5M2   code -> float
  uint32        N, the number of float inputs
  uint32[N]     float32 bit patterns
  uint8[N] x 4  Cast to E4M3FN saturate=1, E4M3FN saturate=0, E5M2 saturate=1, E5M2 saturate=0

Inputs: every 16-bit prefix (sign, exponent, 7 fraction bits) with the low 16 bits set to each of
0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF, plus a stride-4099 sweep over all 2^32 patterns.
FP8 keeps at most 3 fraction bits, so the rounding bit (and, for FP8 subnormals, the bits above it) lies
in the prefix and the low 16 bits only act as sticky bits: exact ties, just below, just above.
"""
import sys

import numpy as np
import onnx
from onnx.reference.ops.op_cast import cast_to

LOW_HALVES = [0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF]
SWEEP_STRIDE = 4099
TARGETS = [(onnx.TensorProto.FLOAT8E4M3FN, True), (onnx.TensorProto.FLOAT8E4M3FN, False),
           (onnx.TensorProto.FLOAT8E5M2, True), (onnx.TensorProto.FLOAT8E5M2, False)]


def main():
    out = sys.stdout.buffer
    codes = np.arange(256, dtype=np.uint8)
    for onnx_type in (onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E5M2):
        fp8 = codes.view(onnx.helper.tensor_dtype_to_np_dtype(onnx_type))
        out.write(fp8.astype(np.float32).astype("<f4").tobytes())

    prefixes = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    structured = (prefixes[:, None] | np.array(LOW_HALVES, dtype=np.uint32)[None, :]).ravel()
    sweep = np.arange(0, 1 << 32, SWEEP_STRIDE, dtype=np.uint64).astype(np.uint32)
    inputs = np.concatenate([structured, sweep])
    out.write(np.uint32(inputs.size).astype("<u4").tobytes())
    out.write(inputs.astype("<u4").tobytes())
    with np.errstate(all="ignore"):
        for onnx_type, saturate in TARGETS:
            out.write(cast_to(inputs.view(np.float32), onnx_type, saturate).view(np.uint8).tobytes())
    out.flush()


if __name__ == "__main__":
    main()
