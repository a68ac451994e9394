#!/usr/bin/env bash
# The master's memory for a bag of many array tasks (docs/command-tasks.md, "One task per
# file, per line, per number"): a treefarm-master and WORKERS one-core workers on loopback
# run `array = "1-TASKS"` of `true` (workers with --cgroups none, the cheapest containment,
# so the run is the master's cost rather than the tasks'). Prints the master's peak
# resident set (results.json master_memory.peak_rss_bytes, the kernel's VmHWM, read after
# every task was recorded and results.json written), the tasks recorded and the wall time.
# Exit code 1 if the peak is over LIMIT_MB or the bag did not complete.
# Usage: tools/bench/bag-memory.sh [BUILD_DIR=build] [TASKS=1000000] [WORKERS=2] [LIMIT_MB=200]
set -euo pipefail
build=${1:-build}
tasks=${2:-1000000}
workers=${3:-2}
limit_mb=${4:-200}
bin="$build/bin"
[[ -x $bin/treefarm-master && -x $bin/treefarm-worker ]] || { echo "bag-memory: build $bin first" >&2; exit 2; }
dir=$(mktemp -d /tmp/treefarm-bag-memory-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
{
  printf '[[node]]\nname = "master"\ncores = 0\n'
  for i in $(seq 1 "$workers"); do printf '\n[[node]]\nname = "w%d"\nparent = "master"\ncores = 1\n' "$i"; done
  printf '\n[[app]]\nname = "many"\nkind = "command"\nargv = ["true"]\narray = "1-%d"\n' "$tasks"
  printf '\n[run]\nbuffer = 64\npolicy = "fcfs"\n'
} >"$dir/many.toml"
start=$(date +%s.%N)
"$bin/treefarm-master" "$dir/many.toml" --out "$dir/out" --ready-file "$dir/m.ep" --quiet >"$dir/master.log" 2>&1 &
pids+=($!)
master=$!
for _ in $(seq 1 100); do [[ -s $dir/m.ep ]] && break; sleep 0.1; done
for i in $(seq 1 "$workers"); do
  "$bin/treefarm-worker" --parent "$(head -1 "$dir/m.ep")" --name "w$i" --cores 1 --listen "" --cgroups none \
    >"$dir/w$i.log" 2>&1 &
  pids+=($!)
done
set +e
wait "$master"
rc=$?
set -e
end=$(date +%s.%N)
[[ $rc -eq 0 ]] || { echo "bag-memory: the master exited with $rc" >&2; tail -20 "$dir/master.log" >&2; exit 1; }
read -r peak recorded < <(/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
m = j["master_memory"]
print(m["peak_rss_bytes"], m["tasks_recorded"])' "$dir/out/results.json")
wall=$(awk -v a="$end" -v b="$start" 'BEGIN {printf "%.1f", a - b}')
peak_mb=$(awk -v p="$peak" 'BEGIN {printf "%.1f", p / 1048576}')
echo "tasks $tasks recorded $recorded workers $workers wall_s $wall master_peak_rss_bytes $peak (${peak_mb} MiB)"
[[ $recorded -eq $tasks ]] || { echo "bag-memory: $recorded of $tasks tasks recorded" >&2; exit 1; }
awk -v p="$peak" -v l="$limit_mb" 'BEGIN {exit !(p <= l * 1048576)}' || { echo "bag-memory: over $limit_mb MiB" >&2; exit 1; }
