#!/usr/bin/env bash
# Audits a model's samples in N shards on this machine, JOBS at a time, then merges them into one report
# (byte-identical to a single audit of every sample on the same machine). The exit code is the merge's:
# 0 the gates pass, 1 a gate failed, 2 an error.
#
#   scripts/audit-shards.sh -n 8 [-j 4] -o report.json [-d shard-dir] MODEL --samples 1000 --seed 7 [audit options]
#
# Audit options go to every shard (not --shard or --json, which this script sets). Gates (--fail-on) and
# --quiet go to the merge. MPAUDIT names the binary (default: mpaudit on PATH). Shards run through xargs -P, which
# every Debian machine has; GNU parallel does the same (docs/scaling.md).
set -euo pipefail

usage() { echo "usage: $0 -n SHARDS (2 or more) [-j JOBS] -o MERGED.json [-d SHARD_DIR] MODEL [audit options]" >&2; exit 2; }
shards="" jobs="$(nproc)" merged="" dir=""
while getopts "n:j:o:d:" opt; do
  case "$opt" in
    n) shards="$OPTARG" ;;
    j) jobs="$OPTARG" ;;
    o) merged="$OPTARG" ;;
    d) dir="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ "$shards" =~ ^[1-9][0-9]*$ && "$shards" -ge 2 && "$jobs" =~ ^[1-9][0-9]*$ && -n "$merged" && $# -ge 1 ]] || usage
mpaudit="${MPAUDIT:-mpaudit}"
model="$1"
shift

audit_args=() gates=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fail-on) gates+=("$1" "$2"); shift 2 ;;
    --fail-on=*) gates+=("$1"); shift ;;
    --quiet) gates+=("$1"); shift ;;  # shards always run quiet; the merge prints the summary unless asked not to
    --shard|--json|--shard=*|--json=*) echo "$0: $1 is set by this script" >&2; exit 2 ;;
    *) audit_args+=("$1"); shift ;;
  esac
done

if [ -z "$dir" ]; then
  dir="$(mktemp -d "${TMPDIR:-/tmp}/mpaudit-shards.XXXXXX")"
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"

# Each shard exits 0 or 1 by its gates, which only the merged report decides: 2 is an error.
run_shard() {
  local k="$1" status=0
  "$mpaudit" audit "$model" "${audit_args[@]}" --shard "$k/$shards" --json "$dir/shard-$k.json" --quiet || status=$?
  [ "$status" -le 1 ] || { echo "$0: shard $k/$shards failed (exit $status)" >&2; exit 255; }
}
export -f run_shard
export mpaudit model shards dir
export AUDIT_ARGS_FILE="$dir/.audit-args"
if [ ${#audit_args[@]} -gt 0 ]; then printf '%s\0' "${audit_args[@]}"; fi > "$AUDIT_ARGS_FILE"
seq 1 "$shards" | xargs -P "$jobs" -I{} bash -c 'mapfile -d "" audit_args < "$AUDIT_ARGS_FILE"; run_shard "$1"' _ {} ||
  { echo "$0: a shard failed; nothing merged" >&2; exit 2; }

reports=()
for k in $(seq 1 "$shards"); do reports+=("$dir/shard-$k.json"); done
"$mpaudit" merge "${reports[@]}" -o "$merged" "${gates[@]}"
