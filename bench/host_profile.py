#!/usr/bin/env python3
"""Where a command's main thread spent its wall time, from bench/host_sampler.cpp's samples.

Usage: host_profile.py OUT.samples [--top N] [--map DEVICE_PREFIX=LOCAL_PREFIX ...]

Three tables: inclusive time per function (each function counted once per sample), time per innermost
mpaudit function (the host inside it or inside a library it called: which of our code paths cost the
time), and time per module of the innermost frame (how much is inside cuDNN, cuBLAS, the CUDA driver).
Frames are named with addr2line where the module exists here (the same path, or mapped with --map) with a
symbol table, else by module.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import subprocess

OURS = re.compile(r"(^|/)(mpaudit|libmpaudit[^/]*\.so)$")


def load_segments(path: str) -> list[tuple[int, int, int]]:
    """(p_offset, p_vaddr, p_filesz) of each LOAD segment of an ELF file."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            segs.append((int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)))
    return segs


def has_symbol_table(path: str) -> bool:
    """Whether addr2line can name functions in `path`: with only dynamic symbols it names the nearest exported
    one, which inside a stripped library is usually another function."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    return " .symtab " in out


def symbolize(path: str, offsets: list[int]) -> dict[int, str]:
    """File offsets of return addresses in `path` -> function names."""
    segs = load_segments(path)
    vaddrs = []
    for off in offsets:
        v = next((va + off - po for po, va, sz in segs if po <= off < po + sz), off)
        vaddrs.append(v - 1)  # a return address points after the call
    names: dict[int, str] = {}
    for i in range(0, len(vaddrs), 2000):
        chunk = vaddrs[i:i + 2000]
        out = subprocess.run(["addr2line", "-f", "-C", "-e", path] + [hex(v) for v in chunk],
                             capture_output=True, text=True).stdout.splitlines()
        for k, off in enumerate(offsets[i:i + 2000]):
            name = out[2 * k] if 2 * k < len(out) else "??"
            names[off] = name
    return names


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("samples")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--map", action="append", default=[])
    args = parser.parse_args()
    remap = [m.split("=", 1) for m in args.map]

    interval_us, maps, samples = 500, [], []
    with open(args.samples) as f:
        for line in f:
            if line.startswith("sample"):
                samples.append([int(a, 16) for a in line.split()[1:]])
            elif line.startswith("map "):
                parts = line[4:].split(maxsplit=5)
                if len(parts) == 6 and "x" in parts[1]:
                    lo, hi = (int(a, 16) for a in parts[0].split("-"))
                    maps.append((lo, hi, int(parts[2], 16), parts[5].strip()))
            elif line.startswith("interval_us"):
                interval_us = int(line.split()[1])
    maps.sort()
    starts = [m[0] for m in maps]

    def where(addr: int) -> tuple[str, int] | None:
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or addr >= maps[i][1]:
            return None
        lo, _, off, path = maps[i]
        return path, addr - lo + off

    wanted: dict[str, set[int]] = collections.defaultdict(set)
    located = []
    for s in samples:
        frames = [where(a) for a in s[2:]]  # frames 0 and 1: the handler and the signal trampoline
        located.append(frames)
        for fr in frames:
            if fr:
                wanted[fr[0]].add(fr[1])
    names: dict[tuple[str, int], str] = {}
    for path, offs in wanted.items():
        local = path
        for dev, loc in remap:
            if path.startswith(dev):
                local = loc + path[len(dev):]
        base = os.path.basename(path)
        # NVIDIA's libraries are named by module only: the copy here may be another version than the one that ran.
        nvidia = any(part in base for part in ("cuda", "cudnn", "cublas"))
        if os.path.exists(local) and (OURS.search(path) or not nvidia) and has_symbol_table(local):
            for off, name in symbolize(local, sorted(offs)).items():
                names[(path, off)] = name if name != "??" else f"{base}+{off:#x}"
        else:
            for off in offs:
                names[(path, off)] = f"[{base}]"

    total = len(located)
    ms = lambda n: n * interval_us / 1000  # noqa: E731
    inclusive: collections.Counter[str] = collections.Counter()
    ours: collections.Counter[str] = collections.Counter()
    module: collections.Counter[str] = collections.Counter()
    for frames in located:
        seen = set()
        innermost_ours = None
        for fr in frames:
            if not fr:
                continue
            name = names[fr]
            if name not in seen:
                seen.add(name)
                inclusive[name] += 1
            if innermost_ours is None and OURS.search(fr[0]):
                innermost_ours = name
        ours[innermost_ours or "(no mpaudit frame)"] += 1
        first = next((fr for fr in frames if fr), None)
        module[os.path.basename(first[0]) if first else "?"] += 1
    print(f"{total} samples every {interval_us} us: {ms(total):.0f} ms of the main thread's wall time")
    for title, counter in (("inclusive", inclusive), ("innermost mpaudit function", ours), ("innermost module", module)):
        print(f"\n== {title}")
        for name, n in counter.most_common(args.top):
            print(f"{100 * n / total:6.1f}% {ms(n):9.1f} ms  {name[:150]}")


if __name__ == "__main__":
    main()
