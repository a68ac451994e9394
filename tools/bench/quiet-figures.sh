#!/usr/bin/env bash
# The headline figures in one go, each beside its reference from the same run, as
# markdown tables for docs/benchmarks.md: no-op dispatch (depth 1 and 2, multi-port and
# one-port) beside raw ZeroMQ, dgemm per core beside the measured FMA peak, the peers
# (Dask, Work Queue) beside treefarm, and optionally the master's bytes per task.
# Every row carries the 1-minute load average read just before it. Run it on a quiet
# machine, as root or not; measurements run at `nice -n -10` when allowed.
# Usage: tools/bench/quiet-figures.sh [BUILD_DIR=build] [--old OLD_TREEFARM] [--memory] [--quick]
#   --old BIN  also run the dispatch rows with another treefarm binary, alternated (before/after)
#   --memory   add `bench memory` (10M no-op tasks: minutes)
#   --quick    smaller counts (a smoke run of the script itself, not figures to publish)
set -euo pipefail
build=build
old=""
memory=0
quick=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --old) old=$2; shift 2 ;;
    --memory) memory=1; shift ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "quiet-figures: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
tf="$build/bin/treefarm"
[[ -x $tf ]] || { echo "quiet-figures: $tf not found (build it first)" >&2; exit 2; }
[[ -z $old || -x $old ]] || { echo "quiet-figures: --old $old is not an executable" >&2; exit 2; }
command -v jq >/dev/null || { echo "quiet-figures: jq is needed (apt-get install jq)" >&2; exit 2; }
nice_cmd=(nice -n -10)
"${nice_cmd[@]}" true 2>/dev/null || nice_cmd=()
# Users do not set OPENBLAS_CORETYPE: the worker chooses its BLAS kernel itself.
run() { env -u OPENBLAS_CORETYPE "${nice_cmd[@]}" "$@"; }
load() { cut -d' ' -f1 /proc/loadavg; }
# table TITLE "| col | col |": a section heading and a markdown table header.
table() {
  local sep
  sep=$(sed 's/[^|]//g; s/|/|---/g; s/---$//' <<<"$2")
  printf '\n## %s\n\n%s\n%s\n' "$1" "$2" "$sep"
}
tasks=200000
peer_noop=2000
peer_mm=200
[[ $quick == 1 ]] && { tasks=20000; peer_noop=200; peer_mm=20; }

echo "# treefarm headline figures ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
echo "main binary: $tf ($("$tf" --version 2>/dev/null | head -1))${old:+; old binary: $old}"
table "Dispatch: no-op tasks, master -> 1 worker on loopback (\`treefarm bench dispatch --tasks $tasks --buffer 1000 --json\`)" \
  "| binary | depth | comm model | load (1 min) | tasks/s | raw ZeroMQ one-way msgs/s (same run) | goal |"
for depth in 1 2; do
  for model in multi-port one-port; do
    for bin in "$tf" ${old:+"$old"}; do
      l=$(load)
      j=$(run "$bin" bench dispatch --tasks "$tasks" --buffer 1000 --depth "$depth" --comm-model "$model" --json 2>/dev/null) || j='{}'
      goal=$([[ $depth == 1 ]] && echo "≥ 250,000" || echo "≥ 150,000")
      printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$([[ $bin == "$tf" ]] && echo new || echo old)" "$depth" "$model" "$l" \
        "$(jq -r '.dispatch_tasks_per_s // "failed" | if type == "number" then floor else . end' <<<"$j")" \
        "$(jq -r '.zmq_one_way_msgs_per_s // "–" | if type == "number" then floor else . end' <<<"$j")" "$goal"
    done
  done
done
table "dgemm per core beside the measured FMA peak (\`treefarm bench kernel --json\`)" \
  "| load (1 min) | BLAS, kernel | standalone dgemm GFLOP/s, wall (n) | CPU share | GFLOP/s per CPU-second | peak GFLOP/s per core (GHz × flop/cycle) | of peak (wall) | of peak (per CPU-second) | goal |"
l=$(load)
j=$(run "$tf" bench kernel --json 2>/dev/null) || j='{}'
# A loaded machine lowers the wall figure, not the rate per CPU-second (thread CPU time).
jq -r --arg l "$l" '(.efficiency.standalone_gflops // 0) as $g | (.efficiency.standalone_cpu_share // 1) as $c | (.peak.peak_gflops_per_core // 0) as $p |
  "| \($l) | \(.blas.library // "?") \(.blas.kernel // "?") | \($g * 10 | floor / 10) (\(.efficiency.n // "?")) | \($c * 1000 | floor / 1000) | \($g / $c * 10 | floor / 10) | \($p * 10 | floor / 10) (\(.peak.ghz // 0 | . * 100 | floor / 100) × \(.peak.flop_per_cycle // "?")) | \(if $p > 0 then $g / $p * 1000 | floor / 1000 else "?" end) | \(if $p > 0 then $g / $c / $p * 1000 | floor / 1000 else "?" end) | ≥ 0.75 |"' <<<"$j"
table "Peers, 2 workers × 1 core each (\`treefarm bench peers --peer-noop-tasks $peer_noop --peer-matmul-tasks $peer_mm --json\`)" \
  "| load (1 min) | runtime | no-op tasks/s | treefarm / it | matmul tasks/s | treefarm / it |"
l=$(load)
peer_args=(--peer-noop-tasks "$peer_noop" --peer-matmul-tasks "$peer_mm")
[[ $quick == 1 ]] && peer_args+=(--treefarm-noop-tasks "$tasks" --treefarm-matmul-tasks 200)
j=$(run "$tf" bench peers "${peer_args[@]}" --json 2>/dev/null) || j='{}'
jq -r --arg l "$l" '"| \($l) | treefarm | \(.treefarm.noop_tasks_per_s // 0 | floor) | – | \(.treefarm.matmul_tasks_per_s // 0 | . * 10 | floor / 10) | – |"' <<<"$j"
jq -r --arg l "$l" '.peers[]? | if .skipped then "| \($l) | \(.name) | skipped: \(.reason) | | | |" else "| \($l) | \(.name) | \(.noop_tasks_per_s | . * 10 | floor / 10) | \(.noop_ratio | floor)×\(if .name == "dask" then " (goal ≥ 400×)" else "" end) | \(.matmul_tasks_per_s | . * 100 | floor / 100) | \(.matmul_ratio | . * 10 | floor / 10)× |" end' <<<"$j"
if [[ $memory == 1 ]]; then
  table "Master memory per task (\`treefarm bench memory --json\`, 10M no-op tasks)" "| load (1 min) | bytes per task (peak RSS) | goal |"
  l=$(load)
  j=$(run "$tf" bench memory --json 2>/dev/null) || j='{}'
  jq -r --arg l "$l" '"| \($l) | \(.bytes_per_task // "failed") | ≤ 100 |"' <<<"$j"
fi
