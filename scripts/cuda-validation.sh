#!/usr/bin/env bash
# What a GPU owner runs to validate the CUDA backend (issue 16): the device, `mpaudit selftest --device cuda`,
# CPU-vs-CUDA audits of the demo, the bundled real models and the bench models (verdicts must agree), the
# wall time of a ResNet-50 and a BERT-base audit on each device and per further sample, and where the host's
# time goes. Logs go to OUT; commit them under docs/.
# The real models are read from ../shared/models beside the checkout, as the golden reports read them.
# Usage: scripts/cuda-validation.sh MPAUDIT OUT [PYTHON (python3)]
set -uo pipefail
mpaudit=$(realpath "$1") out=$(realpath -m "$2") py=${3:-python3}
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

# The bench's ResNet-50 and BERT-base (bench/make_models.py), audited for fp16 as bench/audit_bench.py does:
# wall time of the whole command, best of three, on each device.
"$py" "$here/bench/make_models.py" --out "$out/bench-models" --only resnet50 --only bert_base --only lstm > /dev/null
{
  printf '%-10s %-6s %8s %8s %8s\n' model device run1_ms run2_ms run3_ms
  for name in resnet50 bert_base; do
    for device in cuda cpu; do
      times=()
      for i in 1 2 3; do
        echo "$name $device" >> "$out/speed-timing.log"
        start=$(date +%s%N)
        "$mpaudit" audit "$out/bench-models/$name.onnx" --device "$device" --target fp16 --quiet --no-verify-advice \
          --fail-on 'unsafe_nodes>1000000' --timing --json "$out/$name.$device.json" >> "$out/speed-timing.log" 2>&1
        times+=($(( ($(date +%s%N) - start) / 1000000 )))
      done
      printf '%-10s %-6s %8d %8d %8d\n' "$name" "$device" "${times[@]}"
    done
  done
} 2>&1 | tee "$out/speed.log"
# Per-node device time of the last timed CUDA audit (CUPTI kernel activity, or CUDA events where CUPTI is
# unavailable): where it came from, how many nodes have one, and the heaviest nodes.
"$py" - "$out/resnet50.cuda.json" <<'PY' 2>&1 | tee "$out/node-time.log"
import json, sys
report = json.load(open(sys.argv[1]))
print("node time:", report["config"]["device"]["numerics"]["reference"]["node time"])
nodes = report["nodes"]
timed = [n for n in nodes if n.get("device_time_ms") is not None]
print(f"{len(timed)} of {len(nodes)} nodes have a device time; device {sum(n['device_time_ms'] for n in timed):.2f} ms, "
      f"wall {sum(n['time_ms'] for n in nodes):.2f} ms (reference run, all samples)")
for n in sorted(timed, key=lambda n: -n["device_time_ms"])[:5]:
    print(f"  {n['name'][:40]:40} {n['op_type']:12} device {n['device_time_ms']:.3f} ms, wall {n['time_ms']:.3f} ms")
PY
# Per-sample cost: CUDA audits of 1, 8 and 32 random samples (the difference is what each further sample costs),
# then where the host's time goes in a 32-sample audit (bench/host_sampler.cpp; needs libunwind8), and what the
# backend's CUDA call patterns cost the host (bench/cuda_host_cost.cu).
bin=$(dirname "$mpaudit")
audit_samples() {
  "$mpaudit" audit "$out/bench-models/$1.onnx" --device cuda --target fp16 --samples "$2" --quiet --no-verify-advice \
    --fail-on 'unsafe_nodes>1000000' --json "$out/$1.samples$2.json" > /dev/null 2>&1
}
for name in resnet50 bert_base; do
  for samples in 1 8 32; do
    for i in 1 2; do
      start=$(date +%s%N)
      audit_samples "$name" "$samples"
      echo "$name cuda samples=$samples run=$i wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))"
    done
  done
done 2>&1 | tee "$out/speed-samples.log"
if [ -f "$bin/libmpaudit_host_sampler.so" ]; then
  for name in resnet50 bert_base; do
    MPA_HOST_PROFILE="$out/$name.host-samples" LD_PRELOAD="$bin/libmpaudit_host_sampler.so" audit_samples "$name" 32
    "$py" "$here/bench/host_profile.py" "$out/$name.host-samples" --top 25 > "$out/host-profile-$name.log" 2>&1
  done
fi
[ -x "$bin/mpaudit_cuda_host_cost" ] && "$bin/mpaudit_cuda_host_cost" > "$out/host-cost.log" 2>&1
# CPU-vs-CUDA audits of the golden set (demo and real models) and of the bench models (the LSTM's nodes on the
# device's LSTM kernel, silero-vad's in its If bodies).
"$py" "$here/tests/cuda/check_cuda_audits.py" --mpaudit "$mpaudit" --golden-set --out "$out/reports" \
  "resnet50=$out/bench-models/resnet50.onnx,--target=fp16" "bert_base=$out/bench-models/bert_base.onnx,--target=fp16" \
  "lstm=$out/bench-models/lstm.onnx,--target=fp16" 2>&1 | tee "$out/audits.log"
