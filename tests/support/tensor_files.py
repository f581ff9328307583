"""Writers of the four tensor file kinds `mpaudit tensors` reads, with numpy only (the oracle tests and the
demo share them): .npy, .npz, ONNX TensorProto .pb (built by hand: field numbers of onnx.proto3) and
.safetensors, plus bfloat16 by bit operations (round to nearest even, as the formats' definitions say)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

ONNX_TYPES = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.int32): 6,
              np.dtype(np.int64): 7, np.dtype(np.float16): 10, np.dtype(np.float64): 11}
SAFETENSORS_TYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
                     np.dtype(np.int32): "I32", np.dtype(np.int64): "I64", np.dtype(np.uint8): "U8",
                     np.dtype(np.int8): "I8"}


class BFloat16Bits:
    """bfloat16 values held as their uint16 bits (numpy has no bfloat16)."""

    def __init__(self, bits: np.ndarray) -> None:
        self.bits = bits.astype(np.uint16)

    @staticmethod
    def from_float32(x: np.ndarray) -> "BFloat16Bits":
        return BFloat16Bits(float32_to_bfloat16_bits(x))

    def to_float32(self) -> np.ndarray:
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def float32_to_bfloat16_bits(x: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (u >> 16) | 0x40, rounded).astype(np.uint16)


def round_bfloat16(x: np.ndarray) -> np.ndarray:
    return BFloat16Bits.from_float32(x).to_float32()


def write_npy(path: Path, array: np.ndarray) -> None:
    np.save(path, array)


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def tensor_proto_bytes(name: str, array: np.ndarray | BFloat16Bits) -> bytes:
    """A serialized onnx.TensorProto: dims (1), data_type (2), name (8), raw_data (9)."""
    if isinstance(array, BFloat16Bits):
        dims, data_type, raw = array.bits.shape, 16, array.bits.astype("<u2").tobytes()
    else:
        dims, data_type, raw = array.shape, ONNX_TYPES[array.dtype], np.ascontiguousarray(array).tobytes()
    out = bytearray()
    for d in dims:
        out += b"\x08" + varint(d)
    out += b"\x10" + varint(data_type)
    encoded = name.encode()
    out += b"\x42" + varint(len(encoded)) + encoded
    out += b"\x4a" + varint(len(raw)) + raw
    return bytes(out)


def write_pb(path: Path, name: str, array: np.ndarray | BFloat16Bits) -> None:
    path.write_bytes(tensor_proto_bytes(name, array))


def write_safetensors(path: Path, tensors: dict[str, np.ndarray | BFloat16Bits]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    data = bytearray()
    for name, array in tensors.items():
        if isinstance(array, BFloat16Bits):
            raw, dtype, shape = array.bits.astype("<u2").tobytes(), "BF16", list(array.bits.shape)
        else:
            raw, dtype, shape = np.ascontiguousarray(array).tobytes(), SAFETENSORS_TYPES[array.dtype], list(array.shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(data))
