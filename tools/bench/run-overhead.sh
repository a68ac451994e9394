#!/usr/bin/env bash
# The start-up and shutdown check (docs/benchmarks.md): `treefarm run` of a 100-task quickstart tree never
# takes more than LIMIT seconds beyond its work, in RUNS runs. Per run it prints the wall
# time of the whole command, the work (results.json "duration": first dispatch to last
# completion) and their difference, the overhead (start-up + shutdown); then max and
# median. The overhead is split into start-up (command start to the first dispatch) and
# shutdown (results written to exit), from the master's log. Exit code 1 if some overhead
# exceeds LIMIT.
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
# Seconds since midnight of "HH:MM:SS.fff" (the master's log clock, local time).
secs() { awk -F: '{print $1 * 3600 + $2 * 60 + $3}' <<<"$1"; }
printf '%4s %10s %10s %10s %10s %10s %s\n' run wall_s work_s overhead_s startup_s shutdown_s exit
for i in $(seq 1 "$runs"); do
  start=$(date +%s.%N)
  start_clock=$(date +%H:%M:%S.%N)
  set +e
  "$treefarm" run "$experiment" --out "$out/$i" --quiet --log-level info >/dev/null 2>"$out/$i.err"
  rc=$?
  set -e
  end=$(date +%s.%N)
  end_clock=$(date +%H:%M:%S.%N)
  # Start-up: command start to the master's first dispatch; shutdown: results written to exit.
  t_start=$(grep -m1 'master: starting' "$out/$i.err" | sed -E 's/^\[([0-9:.]+)\].*/\1/' || true)
  t_wrote=$(grep -m1 'master: wrote' "$out/$i.err" | sed -E 's/^\[([0-9:.]+)\].*/\1/' || true)
  startup=nan shutdown=nan
  [[ -n $t_start ]] && startup=$(awk -v a="$(secs "$t_start")" -v b="$(secs "$start_clock")" 'BEGIN {print a - b}')
  [[ -n $t_wrote ]] && shutdown=$(awk -v a="$(secs "$end_clock")" -v b="$(secs "$t_wrote")" 'BEGIN {print a - b}')
  wall=$(awk -v a="$end" -v b="$start" 'BEGIN {print a - b}')
  work=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['duration'])" "$out/$i/results.json" 2>/dev/null || echo 0)
  over=$(awk -v a="$wall" -v b="$work" 'BEGIN {print a - b}')
  overheads+=("$over")
  printf '%4d %10.3f %10.3f %10.3f %10.3f %10.3f %d\n' "$i" "$wall" "$work" "$over" "$startup" "$shutdown" "$rc"
  [[ $rc -eq 0 ]] || { echo "run $i failed (exit $rc):"; tail -5 "$out/$i.err"; }
done
sorted=$(printf '%s\n' "${overheads[@]}" | sort -g)
max=$(echo "$sorted" | tail -1)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}')
printf 'overhead beyond the work over %d runs: max %.3f s, median %.3f s (limit %s s)\n' "$runs" "$max" "$median" "$limit"
awk -v m="$max" -v l="$limit" 'BEGIN {exit !(m > l)}' && exit 1
exit 0
