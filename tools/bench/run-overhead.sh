#!/usr/bin/env bash
# The "done when" check of issue 18: `treefarm run` of a 100-task quickstart tree never
# takes more than LIMIT seconds beyond its work, in RUNS runs. Per run it prints the wall
# time of the whole command, the work (results.json "duration": first dispatch to last
# completion) and their difference, the overhead (start-up + shutdown); then max and
# median. Exit code 1 if some overhead exceeds LIMIT.
# Usage: tools/bench/run-overhead.sh [BUILD_DIR=build] [RUNS=20] [LIMIT=2] [EXPERIMENT=examples/quickstart-tiny.toml]
set -euo pipefail
build=${1:-build}
runs=${2:-20}
limit=${3:-2}
experiment=${4:-examples/quickstart-tiny.toml}
treefarm="$build/bin/treefarm"
[[ -x $treefarm ]] || { echo "run-overhead: $treefarm not found (build it first)" >&2; exit 2; }
[[ -f $experiment ]] || { echo "run-overhead: $experiment not found" >&2; exit 2; }
out=$(mktemp -d /tmp/treefarm-overhead-XXXXXX)
trap 'rm -rf "$out"' EXIT
overheads=()
printf '%4s %10s %10s %10s %s\n' run wall_s work_s overhead_s exit
for i in $(seq 1 "$runs"); do
  start=$(date +%s.%N)
  set +e
  "$treefarm" run "$experiment" --out "$out/$i" --quiet --log-level warn >/dev/null 2>"$out/$i.err"
  rc=$?
  set -e
  end=$(date +%s.%N)
  wall=$(awk -v a="$end" -v b="$start" 'BEGIN {print a - b}')
  work=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['duration'])" "$out/$i/results.json" 2>/dev/null || echo 0)
  over=$(awk -v a="$wall" -v b="$work" 'BEGIN {print a - b}')
  overheads+=("$over")
  printf '%4d %10.3f %10.3f %10.3f %d\n' "$i" "$wall" "$work" "$over" "$rc"
  [[ $rc -eq 0 ]] || { echo "run $i failed (exit $rc):"; tail -5 "$out/$i.err"; }
done
sorted=$(printf '%s\n' "${overheads[@]}" | sort -g)
max=$(echo "$sorted" | tail -1)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}')
printf 'overhead beyond the work over %d runs: max %.3f s, median %.3f s (limit %s s)\n' "$runs" "$max" "$median" "$limit"
awk -v m="$max" -v l="$limit" 'BEGIN {exit !(m > l)}' && exit 1
exit 0
