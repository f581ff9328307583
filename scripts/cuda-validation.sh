#!/usr/bin/env bash
# What a GPU owner runs to validate the CUDA backend (issue 16): the device, `mpaudit selftest --device cuda`,
# CPU-vs-CUDA audits of the demo, the bundled real models and the bench models (verdicts must agree), and the
# wall time of a ResNet-50 and a BERT-base audit on each device. Logs go to OUT; commit them under docs/.
# Usage: scripts/cuda-validation.sh MPAUDIT OUT [REAL_MODELS_DIR (../shared/models)] [PYTHON (python3)]
set -uo pipefail
mpaudit=$1 out=$2 real=${3:-../shared/models} py=${4:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  "$mpaudit" --version
  "$mpaudit" devices
} 2>&1 | tee "$out/devices.log"

"$mpaudit" selftest --device cuda --coverage > "$out/selftest.log" 2>&1
echo "selftest exit $?" | tee -a "$out/selftest.log"
tail -1 "$out/selftest.log"; grep -E " FAIL " "$out/selftest.log" | head -40

demo=$here/models/demo
models=("$demo/tiny_cnn.onnx:image=$demo/digit.npy"
        "$demo/tiny_attention.onnx:hidden=$demo/attention_hidden.npy,attention_mask=$demo/attention_mask.npy")
for m in "$real"/*/*.onnx; do models+=("$m"); done
"$py" "$here/tests/cuda/check_cuda_audits.py" --mpaudit "$mpaudit" --out "$out/reports" "${models[@]}" 2>&1 |
  tee "$out/audits.log"

# The bench's ResNet-50 and BERT-base (bench/make_models.py), audited for fp16 as bench/audit_bench.py does:
# wall time of the whole command, best of three, on each device.
"$py" "$here/bench/make_models.py" --out "$out/bench-models" --only resnet50 --only bert_base > /dev/null
{
  printf '%-10s %-6s %8s %8s %8s\n' model device run1_ms run2_ms run3_ms
  for name in resnet50 bert_base; do
    for device in cuda cpu; do
      times=()
      for i in 1 2 3; do
        start=$(date +%s%N)
        "$mpaudit" audit "$out/bench-models/$name.onnx" --device "$device" --target fp16 --quiet --no-verify-advice \
          --fail-on 'unsafe_nodes>1000000' --json "$out/reports/$name.$device.json" > /dev/null 2>"$out/$name.$device.err"
        times+=($(( ($(date +%s%N) - start) / 1000000 )))
      done
      printf '%-10s %-6s %8d %8d %8d\n' "$name" "$device" "${times[@]}"
    done
  done
} 2>&1 | tee "$out/speed.log"
"$py" "$here/tests/cuda/check_cuda_audits.py" --mpaudit "$mpaudit" --samples 1 --target fp16 --out "$out/reports-bench" \
  "$out/bench-models/resnet50.onnx" "$out/bench-models/bert_base.onnx" 2>&1 | tee -a "$out/audits.log"
