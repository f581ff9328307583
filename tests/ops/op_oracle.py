"""One ONNX node run by mpaudit and by an independent implementation, outputs compared.

Each tests/ops/test_<family>.py builds cases with `case(...)` and checks them with `OpOracle.check(...)`;
ctest runs every such file (tests/CMakeLists.txt) as `python3 test_<family>.py --mpaudit build/mpaudit`.
The reference is onnxruntime (what users compare against) or, for ops onnxruntime 1.22 lacks, onnx's
reference implementation (`onnx.reference.ReferenceEvaluator`), or, for what neither runs (contrib ops
onnxruntime's CPU EP lacks or computes differently), expected outputs the test computes itself with numpy
(reference="given"). NaN must match NaN, infinities must match
exactly, everything else within rtol/atol; integer and bool outputs must be equal.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checklist import Checklist  # noqa: E402


@dataclass
class Case:
    name: str
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    rtol: float = 1e-5
    atol: float = 1e-6
    reference: str = "ort"  # "ort", "onnx-ref" or "given"
    expected: list[np.ndarray] | None = None  # the outputs, for reference="given"
    # OpRun classes the onnx reference runs instead of its own (ops whose newest version it implements
    # but does not register, e.g. QuantizeLinear 23-25 in onnx 1.22).
    reference_ops: tuple = ()


def _value_info(name: str, array: np.ndarray) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))


def case(name: str, op: str, feeds: dict[str, np.ndarray], outputs: list[str], *, domain: str = "",
         opset: int = 21, inputs: list[str] | None = None, initializers: dict[str, np.ndarray] | None = None,
         rtol: float = 1e-5, atol: float = 1e-6, reference: str = "ort", expected: list[np.ndarray] | None = None,
         reference_ops: tuple = (),
         **attributes) -> Case:
    """A model of the single node `op` (domain, opset), fed `feeds` by name. `inputs` orders the node's
    inputs ("" for an omitted optional one; default: the feeds' and initializers' order); `initializers` are
    constant inputs stored in the model. Output types and shapes are left for the runtimes to infer. `expected`
    (one array per output) makes the reference "given". An output named "" is an omitted optional one."""
    initializers = initializers or {}
    node_inputs = inputs if inputs is not None else [*feeds, *initializers]
    node = helper.make_node(op, node_inputs, outputs, domain=domain or None, **attributes)
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    graph = helper.make_graph([node], name, [_value_info(k, v) for k, v in feeds.items()],
                              [onnx.ValueInfoProto(name=o) for o in outputs if o],
                              [onnx.numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=imports, ir_version=10)
    return Case(name, model, feeds, rtol, atol, "given" if expected is not None else reference, expected,
                reference_ops)


@dataclass
class OpOracle:
    mpaudit: str
    checks: Checklist
    work: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="mpaudit-ops-")))

    def reference_outputs(self, c: Case) -> list[np.ndarray]:
        if c.reference == "given":
            return c.expected
        if c.reference == "ort":
            import onnxruntime as ort
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            session = ort.InferenceSession(c.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            return session.run(None, c.feeds)
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(c.model, new_ops=list(c.reference_ops) or None).run(None, c.feeds)

    def mpaudit_outputs(self, c: Case) -> tuple[list[np.ndarray] | None, str]:
        folder = self.work / c.name
        folder.mkdir(parents=True, exist_ok=True)
        model_path = folder / "model.onnx"
        model_path.write_bytes(c.model.SerializeToString())
        args = [self.mpaudit, "run", str(model_path), "--threads", "2", "--save-outputs", str(folder / "out")]
        if c.feeds:
            np.savez(folder / "inputs.npz", **c.feeds)
            args += ["--inputs", str(folder / "inputs.npz")]
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            return None, f"exit {run.returncode}: {run.stderr.strip()}"
        names = [o.name for o in c.model.graph.output]
        return [np.load(folder / "out" / f"{name}.npy") for name in names], ""

    def check(self, c: Case) -> None:
        expected = self.reference_outputs(c)
        got, error = self.mpaudit_outputs(c)
        if got is None:
            self.checks(False, f"{c.name}: mpaudit {error}")
            return
        for name, want, have in zip([o.name for o in c.model.graph.output], expected, got):
            want = np.asarray(want)
            self.checks(*compare(f"{c.name}: {name}", want, as_narrow(have, want.dtype), c.rtol, c.atol))

    def expect_error(self, c: Case, message_part: str) -> None:
        """mpaudit refuses the model with exit 2 and a message containing `message_part`."""
        got, error = self.mpaudit_outputs(c)
        self.checks(got is None and error.startswith("exit 2") and message_part in error,
                    f"{c.name}: refused naming '{message_part}' ({error or 'ran'})")


def as_narrow(have: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """mpaudit saves the narrow types numpy lacks (float8, float4, int4, int2: ml_dtypes') one byte per
    element, float codes as uint8, int4/int2 sign-extended as int8: back to the reference's dtype."""
    import ml_dtypes
    narrow_floats = {np.dtype(t) for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
                                           ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn)}
    if dtype in narrow_floats:  # ml_dtypes holds float4 a byte per element too, the code in the low bits
        return have.view(np.uint8).view(dtype)
    if dtype in {np.dtype(t) for t in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2)}:
        return have.astype(dtype)
    return have


def compare(what: str, want: np.ndarray, have: np.ndarray, rtol: float, atol: float) -> tuple[bool, str]:
    if want.shape != have.shape:
        return False, f"{what}: shape {have.shape}, expected {want.shape}"
    if want.dtype.kind in "biuU" or want.dtype == np.bool_:
        ok = np.array_equal(want, have)
        return ok, f"{what}: {'equal' if ok else 'differs'} ({want.dtype}{list(want.shape)})"
    w, h = want.astype(np.float64), have.astype(np.float64)
    nan_ok = np.array_equal(np.isnan(w), np.isnan(h))
    finite = np.isfinite(w) & np.isfinite(h)
    inf_ok = np.array_equal(w[np.isinf(w)], h[np.isinf(w)]) and np.array_equal(np.isinf(w), np.isinf(h))
    close = np.allclose(w[finite], h[finite], rtol=rtol, atol=atol)
    worst = float(np.max(np.abs(w[finite] - h[finite]), initial=0.0))
    return nan_ok and inf_ok and close, f"{what}: max abs diff {worst:.3g} (rtol {rtol:g}, atol {atol:g})" + (
        "" if nan_ok and inf_ok else ", NaN/inf positions differ")


def main(name: str, cases, extra=None) -> int:
    """Entry point of a test_<family>.py: `cases()` yields the Cases to check; `extra(oracle)`, if given,
    runs checks beyond `check` (e.g. expect_error)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpaudit", required=True)
    args = parser.parse_args()
    checks = Checklist(name)
    oracle = OpOracle(args.mpaudit, checks)
    for c in cases():
        oracle.check(c)
    if extra:
        extra(oracle)
    return checks.finish()
