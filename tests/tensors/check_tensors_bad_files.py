#!/usr/bin/env python3
"""Bad tensor files and options for `mpaudit tensors`: each must end with exit code 2 and one line on stderr
that names the file (and the tensor inside it, for .npz and .safetensors) - never a crash, a hang, an
allocation of what a header claims, or a report.

Cases: truncated data, wrong magic or header, huge declared shapes, unknown element types, in each of
.npy, .npz, .pb and .safetensors; duplicate tensor names in a step; missing paths; a --master weight
without its update or with another shape; option values out of their domain.

Usage: check_tensors_bad_files.py --mpaudit build/mpaudit
"""

from __future__ import annotations

import argparse
import io
import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checklist import Checklist  # noqa: E402
from tensor_files import tensor_proto_bytes, varint, write_safetensors  # noqa: E402


def npy_bytes(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def npy_with_header(descr: str, shape: str, data: bytes) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def safetensors_bytes(header: dict, data: bytes, declared_length: int | None = None) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if declared_length is None else declared_length) + text + data


def npz_bytes(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name + ".npy", data)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpaudit", required=True)
    args = parser.parse_args()
    check = Checklist("tensors bad files")
    good = np.arange(12, dtype=np.float32)
    good_npy = npy_bytes(good)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def case(what: str, files: dict[str, bytes], expected: list[str], extra: list[str] | None = None,
                 paths: list[str] | None = None) -> None:
            folder = root / what.replace(" ", "_").replace("/", "_")
            folder.mkdir()
            for name, data in files.items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(data)
            report = folder / "report.json"
            targets = [str(folder / p) for p in (paths or sorted(files))]
            result = subprocess.run([args.mpaudit, "tensors", *targets, "--json", str(report), *(extra or [])],
                                    capture_output=True, text=True, timeout=60)
            lines = result.stderr.strip().splitlines()
            line = lines[-1] if lines else ""
            ok = (result.returncode == 2 and len(lines) == 1 and line.startswith("mpaudit: error: ")
                  and all(e in line for e in expected) and not report.exists())
            check(ok, f"{what}: exit 2, one line naming {expected}" + ("" if ok else f" (got {result.returncode}: {result.stderr!r})"))

        # .npy
        case("npy truncated", {"g.npy": good_npy[:-5]}, ["g.npy", "shorter"])
        case("npy bad magic", {"g.npy": b"NOTNUMPY" + good_npy[8:]}, ["g.npy", "bad magic"])
        case("npy short header", {"g.npy": good_npy[:9]}, ["g.npy"])
        case("npy header claims too much", {"g.npy": b"\x93NUMPY\x02\x00" + struct.pack("<I", 1 << 31)}, ["g.npy", "header"])
        case("npy huge shape", {"g.npy": npy_with_header("<f4", "(1099511627776, 4096)", b"\0" * 64)}, ["g.npy", "shorter"])
        case("npy overflowing shape", {"g.npy": npy_with_header("<f4", "(4611686018427387904, 4)", b"")}, ["g.npy"])
        case("npy unknown dtype", {"g.npy": npy_with_header("<c8", "(2,)", b"\0" * 16)}, ["g.npy", "dtype"])
        case("npy bad shape text", {"g.npy": npy_with_header("<f4", "(2, x)", b"\0" * 8)}, ["g.npy", "shape"])
        # .npz: the member is named
        case("npz truncated member", {"grads.npz": npz_bytes({"fc1": good_npy[:-8]})}, ["grads.npz[fc1]", "shorter"])
        case("npz huge member shape", {"grads.npz": npz_bytes({"fc2": npy_with_header("<f4", "(1099511627776,)", b"\0" * 8)})},
             ["grads.npz[fc2]"])
        case("npz unknown dtype", {"grads.npz": npz_bytes({"fc3": npy_with_header("<U4", "(2,)", b"\0" * 32)})},
             ["grads.npz[fc3]", "dtype"])
        case("npz not a zip", {"grads.npz": b"PK\x03\x04 not really"}, ["grads.npz"])
        # .pb
        case("pb not a proto", {"w.pb": b"\xff\xff\xff\xff"}, ["w.pb"])
        case("pb truncated", {"w.pb": tensor_proto_bytes("w", good)[:-7]}, ["w.pb"])
        huge_dims = b"\x08" + varint(1 << 40) + b"\x08" + varint(1 << 20) + b"\x10\x01" + b"\x4a\x08" + b"\0" * 8
        case("pb huge dims", {"w.pb": huge_dims}, ["w.pb"])
        case("pb fp8 type", {"w.pb": b"\x08\x02\x10\x11\x42\x01w\x4a\x02\x00\x00"}, ["w.pb"])
        # .safetensors: the tensor is named
        entry = {"dtype": "F32", "shape": [12], "data_offsets": [0, 48]}
        case("safetensors truncated data", {"m.safetensors": safetensors_bytes({"fc1.w": entry}, good.tobytes()[:40])},
             ["m.safetensors[fc1.w]", "outside"])
        case("safetensors huge header length", {"m.safetensors": safetensors_bytes({"fc1.w": entry}, good.tobytes(), 1 << 60)},
             ["m.safetensors", "header"])
        case("safetensors no header", {"m.safetensors": b"\x01\x02"}, ["m.safetensors"])
        case("safetensors bad json", {"m.safetensors": struct.pack("<Q", 5) + b"{bad}"}, ["m.safetensors", "JSON"])
        case("safetensors unknown dtype",
             {"m.safetensors": safetensors_bytes({"fc1.w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}}, b"\0" * 4)},
             ["m.safetensors[fc1.w]", "F8_E4M3"])
        case("safetensors huge shape",
             {"m.safetensors": safetensors_bytes({"fc1.w": {"dtype": "F32", "shape": [1 << 40, 1 << 20], "data_offsets": [0, 48]}},
                                                 good.tobytes())}, ["m.safetensors[fc1.w]"])
        case("safetensors shape and offsets disagree",
             {"m.safetensors": safetensors_bytes({"fc1.w": {"dtype": "F32", "shape": [13], "data_offsets": [0, 48]}}, good.tobytes())},
             ["m.safetensors[fc1.w]", "data_offsets"])
        # Steps, names and options
        case("duplicate names", {"s/g.npy": good_npy, "s/more.npz": npz_bytes({"g": good_npy})}, ["g", "second tensor"],
             paths=["s"])
        case("missing path", {"g.npy": good_npy}, ["nothing.npy", "no such"], paths=["nothing.npy"])
        case("not a tensor file", {"g.txt": b"hello"}, ["g.txt", "not a tensor file"])
        case("empty folder", {"d/readme.txt": b"x"}, ["no tensor files"], paths=["d"])
        case("weight without update", {"weight.a.npy": good_npy}, ["weight.a", "update.a"], ["--master", "weight.*=update.*"])
        case("weight and update shapes differ", {"weight.a.npy": good_npy, "update.a.npy": npy_bytes(good[:5])},
             ["weight.a", "update.a", "shape"], ["--master", "weight.*=update.*"])
        case("init scale not a power of two", {"g.npy": good_npy}, ["--init-scale", "power of two"], ["--init-scale", "1000"])
        case("unknown gate metric", {"g.npy": good_npy}, ["--fail-on", "nonsense"], ["--fail-on", "nonsense>1"])
        case("vanished gate without pairs", {"g.npy": good_npy}, ["vanished_frac", "--master"], ["--fail-on", "fp16.vanished_frac>0.5"])
        case("bad target", {"g.npy": good_npy}, ["--target", "fp12"], ["--target", "fp12"])
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
