#!/usr/bin/env bash
# mpaudit runs where no CUDA library is installed (issue 16): the executable names none as NEEDED, and a CPU
# audit loads none (the CUDA backend is a module, loaded only for --device cuda, `devices` and `selftest`).
# Usage: check_no_cuda_needed.sh MPAUDIT MODEL INPUT=FILE
set -euo pipefail
mpaudit=$1 model=$2 input=$3
cuda_libs='libcuda\.|libcudart|libcublas|libcudnn|libcupti|libnvrtc|libmpaudit_backend'
if readelf -d "$mpaudit" | grep NEEDED | grep -E "$cuda_libs"; then
  echo "FAIL: mpaudit links a CUDA library"
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
LD_DEBUG=libs env -u LD_LIBRARY_PATH "$mpaudit" audit "$model" --input "$input" --quiet --device cpu \
  --json "$out/report.json" 2>"$out/loader.log" || { echo "FAIL: the CPU audit failed"; tail -3 "$out/loader.log"; exit 1; }
if grep -E "calling init: .*($cuda_libs)" "$out/loader.log"; then
  echo "FAIL: a CPU audit loaded a CUDA library"
  exit 1
fi
echo "ok: mpaudit needs no CUDA library and a CPU audit loads none"
