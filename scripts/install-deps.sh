#!/usr/bin/env bash
# Installs what mpaudit needs on Debian 12: system packages via apt-get (only those missing) and the
# test-only Python oracles from requirements-test.txt into .venv. Idempotent, no prompts; works as root or via sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ccache pkg-config python3 python3-venv
  libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev
  libopenblas-openmp-dev libcli11-dev libzip-dev libssl-dev libvalijson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libimgui-dev libglfw3-dev libgl-dev libstb-dev xvfb xauth
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
  echo "install-deps: pip install -r requirements-test.txt"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements-test.txt
  echo "$want" > "$STAMP"
fi
