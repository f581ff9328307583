#!/usr/bin/env bash
# The host sampler (bench/host_sampler.cpp) samples a real audit, and bench/host_profile.py names where its time
# went: the samples file holds the stacks and the memory map, and the profile finds the audit's own functions.
# Usage: check_host_sampler.sh MPAUDIT SAMPLER_LIBRARY PYTHON SOURCE_ROOT
set -euo pipefail
mpaudit=$1 sampler=$2 py=$3 root=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
MPA_HOST_PROFILE="$work/audit.samples" MPA_HOST_PROFILE_US=50 LD_PRELOAD="$sampler" \
  "$mpaudit" audit "$root/models/demo/tiny_cnn.onnx" --samples 64 --quiet --no-verify-advice \
  --fail-on 'unsafe_nodes>1000000' --json "$work/report.json"
samples=$(grep -c '^sample ' "$work/audit.samples")
grep -q '^map .*mpaudit' "$work/audit.samples" || { echo "FAIL: no memory map of mpaudit in the samples"; exit 1; }
[ "$samples" -ge 20 ] || { echo "FAIL: only $samples samples"; exit 1; }
"$py" "$root/bench/host_profile.py" "$work/audit.samples" --top 40 > "$work/profile.txt"
cat "$work/profile.txt"
grep -Eq '^ *[0-9.]+% +[0-9.]+ ms  mpa::Auditor::observe' "$work/profile.txt" ||
  { echo "FAIL: the profile does not name mpa::Auditor::observe"; exit 1; }
echo "host sampler: $samples samples, the audit's functions named"
