"""Expected fp16 results of elementwise ops, for tests/numerics/test_fp16_elementwise.cpp.

numpy (2.2.6, pinned in requirements-test.txt) computes float16 arithmetic by converting to float, computing
and rounding once to float16: the model mpaudit's fp16 emulation follows, so Add Sub Mul Div Sqrt Neg Abs
Min Max Relu Where Cast must match bit for bit. Elementary functions (Exp Log Tanh Sigmoid Erf Pow) are
computed here in float64 and rounded once to float16 (the correctly rounded result); mpaudit computes them
with float libm, so they must match within 1 fp16 ulp. Gelu, a formula over erf or tanh, is evaluated in
float32 op by op (see main). numpy has no erf: math.erf per element.

Output, one block per case (all values as hex bit patterns; inputs are float32 bits, bool inputs 0/1):
  case <name> <op type> <exact|ulp1> [attribute=value ...]
  input <float|bool> <count> <hex> ...
  ... one line per input ...
  output <count> <hex fp16 bits> ...
  end
Inputs are deterministic (fixed seed): random values plus edge cases (signed zeros, subnormals, ±65504,
values whose results round to ±Inf, ±Inf, NaN).
"""
import math
import sys

import numpy as np

RNG = np.random.default_rng(20240611)
F16 = np.float16

# fp16 edge values: signed zeros, smallest subnormals, largest subnormal, smallest normal, ±1, ±max, ±Inf, NaN.
EDGES = np.array(
    [0.0, -0.0, 2.0**-24, -(2.0**-24), 3 * 2.0**-24, 1023 * 2.0**-24, 2.0**-14, 1.0, -1.0, 0.5, 2.0, 255.875,
     256.0, 11.0859375, -17.5, 65504.0, -65504.0, 32768.0, np.inf, -np.inf, np.nan],
    dtype=F16)


def random_halves(count, scale):
    """count fp16 values: scale * N(0, 1), a few of them tiny (subnormal range) or huge."""
    values = RNG.standard_normal(count) * scale
    values[::7] *= 1e-6
    values[::11] *= 1e3
    return values.astype(F16)


def operand(count, scale=4.0):
    """Edge values first, then random ones."""
    return np.concatenate([EDGES, random_halves(count - EDGES.size, scale)])


def pairs(count, scale=4.0):
    """Two operands holding every pair of edge values, then random pairs."""
    a_edge, b_edge = np.meshgrid(EDGES, EDGES)
    a = np.concatenate([a_edge.ravel(), random_halves(count, scale)])
    b = np.concatenate([b_edge.ravel(), random_halves(count, scale)])
    # Pairs whose result rounds to ±Inf or lands exactly on a tie: 65504 + 16 (half way to the next step).
    a = np.concatenate([a, np.array([65504, 65504, 300, -300, 60000, 1.0], dtype=F16)])
    b = np.concatenate([b, np.array([16, 15.99, 300, 300, 6000, 2.0**-11], dtype=F16)])
    return a, b


def rounded(values64):
    """float64 results, rounded once to fp16."""
    return np.asarray(values64, dtype=np.float64).astype(F16)


def emit(name, op, tolerance, inputs, output, attributes=()):
    lines = [" ".join(["case", name, op, tolerance, *attributes])]
    for values in inputs:
        if values.dtype == np.bool_:
            lines.append(f"input bool {values.size} " + " ".join("1" if v else "0" for v in values))
        else:
            bits = values.astype(np.float32).view(np.uint32)
            lines.append(f"input float {values.size} " + " ".join(f"{b:x}" for b in bits))
    out_bits = np.asarray(output, dtype=F16).view(np.uint16)
    lines.append(f"output {out_bits.size} " + " ".join(f"{b:x}" for b in out_bits))
    lines.append("end")
    sys.stdout.write("\n".join(lines) + "\n")


def erf64(x):
    return np.array([math.erf(v) if not math.isnan(v) else math.nan for v in x.astype(np.float64)])


def main():
    n = 3000
    with np.errstate(all="ignore"):
        a, b = pairs(n)
        emit("add", "Add", "exact", [a, b], a + b)
        emit("sub", "Sub", "exact", [a, b], a - b)
        emit("mul", "Mul", "exact", [a, b], a * b)
        emit("div", "Div", "exact", [a, b], a / b)
        emit("min", "Min", "exact", [a, b], np.minimum(a, b))
        emit("max", "Max", "exact", [a, b], np.maximum(a, b))
        condition = RNG.random(a.size) < 0.5
        emit("where", "Where", "exact", [condition, a, b], np.where(condition, a, b))

        x = operand(n)
        emit("sqrt", "Sqrt", "exact", [x], np.sqrt(x))
        emit("neg", "Neg", "exact", [x], -x)
        emit("abs", "Abs", "exact", [x], np.abs(x))
        emit("relu", "Relu", "exact", [x], np.maximum(x, F16(0)))  # as onnx.reference's Relu

        # Cast from float32 values that are not on the fp16 grid: ties, the overflow threshold 65520,
        # half the smallest subnormal (2^-25 rounds to 0, just above it to 2^-24).
        wide = np.concatenate([
            RNG.standard_normal(n).astype(np.float32) * np.float32(1000),
            np.array([65519.99, 65520.0, -65520.0, 1e6, 2.0**-25, 2.0**-25 * 1.0001, -(2.0**-26), 1.0 + 2.0**-11,
                      1.0 + 3 * 2.0**-11, 2049.0, 2051.0, 1e-8, np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=np.float32),
        ])
        emit("cast", "Cast", "exact", [wide], wide.astype(F16), ["to=10"])

        x64 = x.astype(np.float64)
        emit("exp", "Exp", "ulp1", [x], rounded(np.exp(x64)))
        emit("log", "Log", "ulp1", [x], rounded(np.log(x64)))
        emit("tanh", "Tanh", "ulp1", [x], rounded(np.tanh(x64)))
        emit("sigmoid", "Sigmoid", "ulp1", [x], rounded(1.0 / (1.0 + np.exp(-x64))))
        emit("erf", "Erf", "ulp1", [x], rounded(erf64(x)))
        # Gelu is a formula, not an elementary function: evaluated in float32 as GPU runtimes do (PyTorch's
        # opmath, ORT's FastGelu in float), with correctly rounded erf / tanh, then rounded once. float64
        # would differ by more than 1 fp16 ulp for x < -4, where 1 + erf(x / sqrt 2) cancels in float32.
        x32 = x.astype(np.float32)
        f32 = np.float32
        erf32 = erf64(x32 * f32(0.7071067811865476)).astype(np.float32)
        emit("gelu", "Gelu", "ulp1", [x], (f32(0.5) * x32 * (f32(1) + erf32)).astype(F16))
        inner = f32(0.7978845608028654) * (x32 + f32(0.044715) * x32 * x32 * x32)
        tanh32 = np.tanh(inner.astype(np.float64)).astype(np.float32)
        emit("gelu_tanh", "Gelu", "ulp1", [x], (f32(0.5) * x32 * (f32(1) + tanh32)).astype(F16), ["approximate=tanh"])
        base, exponent = pairs(n, scale=2.0)
        emit("pow", "Pow", "ulp1", [base, exponent], rounded(np.power(base.astype(np.float64), exponent.astype(np.float64))))


if __name__ == "__main__":
    main()
