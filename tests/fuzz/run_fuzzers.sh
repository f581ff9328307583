#!/usr/bin/env bash
# Runs every fuzz target of BUILD (make fuzz) for SECONDS each, JOBS at a time, and fails when one finds
# something. Each target starts from its seeds (tests/fuzz/corpus/NAME) and the inputs that once crashed it
# (tests/fuzz/regressions/NAME), read-only; what it learns goes to BUILD/fuzz-corpus/NAME, kept for the next
# run, and a crashing, hanging or memory-hungry input to BUILD/artifacts/NAME/.
# Usage: tests/fuzz/run_fuzzers.sh BUILD [SECONDS] [JOBS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1 seconds=${2:-60} jobs=${3:-2}
shift $(($# < 3 ? $# : 3))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for binary in "$build"/tests/fuzz/fuzz_*; do targets+=("$(basename "$binary" | sed 's/^fuzz_//')"); done
fi

# Leaks are not findings (the entry points may leak on error paths); everything else stops the run.
export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One thread per fuzzer: JOBS of them share the machine.
export OMP_NUM_THREADS=1

run_one() {
  local name=$1 binary="$build/tests/fuzz/fuzz_$1"
  local corpus="$build/fuzz-corpus/$name" artifacts="$build/artifacts/$name/" log="$build/fuzz-logs/$name.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local seeds=(tests/fuzz/corpus/"$name")
  [ -d tests/fuzz/regressions/"$name" ] && seeds+=(tests/fuzz/regressions/"$name")
  local dict=()
  [ -f tests/fuzz/"$name".dict ] && dict=(-dict=tests/fuzz/"$name".dict)
  # A crash, an allocation past 2 GiB or a run of one input past 30 s is a finding.
  if "$binary" -max_total_time="$seconds" -rss_limit_mb=2560 -malloc_limit_mb=2048 -timeout=30 \
       -artifact_prefix="$artifacts" -print_final_stats=1 "${dict[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    echo "fuzz $name: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${seconds} s, no finding"
  else
    echo "fuzz $name: FINDING (log $log)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*terminate called|.*Test unit written)' "$log" | head -5 | sed 's/^/  /'
    return 1
  fi
}
export -f run_one
export build seconds

printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
