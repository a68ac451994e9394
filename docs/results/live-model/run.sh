#!/bin/bash
# The measurements of docs/results/live-model.md, one part at a time:
#
#   docs/results/live-model/run.sh sim    OUT   # the changing star simulated: lp (re-planning, one plan), fcfs, price, migration modes
#   docs/results/live-model/run.sh star   OUT   # the same star emulated, w1's CPU quota cut to a quarter at 30 s (root)
#   docs/results/live-model/run.sh steady OUT   # a 5-minute emulated run of that star without the cut: its re-plans (root)
#   docs/results/live-model/run.sh lan    OUT   # every examples/lan-*.toml emulated under lp against its a-priori prediction (root)
#
# TREEFARM (default: build/bin/treefarm) is the treefarm to run. Emulated runs go one
# after the other at `nice -n -10`; each line printed names the 1-minute load average
# when the run ended (an emulated run is slower on a loaded machine: its quotas are upper
# bounds); the first line names the machine. Every run keeps its results.json under OUT.
# Run from the repository's top.
set -euo pipefail

part=${1:?usage: run.sh sim|star|steady|lan OUT}
out=${2:?usage: run.sh sim|star|steady|lan OUT}
tf=${TREEFARM:-build/bin/treefarm}
here=$(dirname "$0")
mkdir -p "$out"

load() { cut -d' ' -f1 /proc/loadavg; }

# The machine the figures come from: CPUs, vendor, family and model.
echo "machine: $(nproc) CPUs, $(awk -F': ' '/^vendor_id/ {v = $2} /^cpu family/ {f = $2} /^model\t/ {m = $2} END {print v " family " f " model " m}' /proc/cpuinfo)"

# The star's makespan against the best the platform after the cut allowed (makespan.py).
report() { "$here/makespan.py" "$1/results.json" | sed "s|^|  [load $(load)] |"; }

# An experiment file: $1 with `replan = $2`, the [[event]] kept or dropped ($3 = keep|drop)
# and $4 tasks (empty: as it is).
variant() {
  local src=$1 replan=$2 event=$3 tasks=${4:-}
  awk -v replan="$replan" -v event="$event" -v tasks="$tasks" '
    /^\[\[event\]\]/ { if (event == "drop") skip = 1 }
    /^\[/ && !/^\[\[event\]\]/ { skip = 0 }
    skip { next }
    /^replan = / { print "replan = " replan; next }
    /^tasks = / && tasks != "" { print "tasks = " tasks; next }
    { print }' "$src"
}

case $part in
sim)
  variant examples/replan-star.toml 0 keep > "$out/one-plan.toml"
  run() {  # name, experiment, options...
    local name=$1 ex=$2; shift 2
    "$tf" simulate "$ex" --out "$out/$name" --quiet "$@" > "$out/$name.log" 2>&1
    echo "$name: $*"; report "$out/$name"
  }
  run lp-replan examples/replan-star.toml --policy lp
  run lp-replan-pull examples/replan-star.toml --policy lp --migration pull
  run lp-replan-push examples/replan-star.toml --policy lp --migration push
  run lp-one-plan "$out/one-plan.toml" --policy lp
  run fcfs-push examples/replan-star.toml --policy fcfs --migration push
  run fcfs-pull examples/replan-star.toml --policy fcfs --migration pull
  run price examples/replan-star.toml --policy price
  run price-pull examples/replan-star.toml --policy price --migration pull
  run price-push examples/replan-star.toml --policy price --migration push
  # The same star steady (no speed change) for 1,000 tasks (333 s): its re-plans.
  variant examples/replan-star.toml 1 drop 1000 > "$out/steady.toml"
  "$tf" simulate "$out/steady.toml" --policy lp --out "$out/steady" --quiet > "$out/steady.log" 2>&1
  jq -r '"steady (simulated): \(.duration | floor) s, \(.replans | length) re-plans"' "$out/steady/results.json"
  ;;
star)
  ex=examples/replan-star-emulated.toml
  variant "$ex" 0 keep > "$out/one-plan.toml"
  cal=${CALIBRATION:-$out/calibration.json}
  if [ ! -f "$cal" ]; then
    nice -n -10 "$tf" emulate "$ex" calibrate --calibration-out "$cal" > "$out/calibrate.log" 2>&1
    echo "calibrated: $cal [load $(load)]"
  fi
  i=0
  run() {  # name, experiment, options...
    local name=$1 e=$2; shift 2
    i=$((i + 1))
    nice -n -10 "$tf" emulate "$e" run --calibration "$cal" --out "$out/$i-$name" --quiet "$@" > "$out/$i-$name.log" 2>&1
    echo "$i-$name: $*"; report "$out/$i-$name"
  }
  # RUNS: the runs, in order (a name may repeat).
  for name in ${RUNS:-lp-replan lp-replan-pull fcfs-push price price-push lp-one-plan}; do
    case $name in
    lp-replan*) r=${name#lp-replan}; run "$name" "$ex" --policy lp ${r:+--migration ${r#-}} ;;
    lp-one-plan) run "$name" "$out/one-plan.toml" --policy lp ;;
    fcfs-*) run "$name" "$ex" --policy fcfs --migration "${name#fcfs-}" ;;
    price) run "$name" "$ex" --policy price ;;
    price-*) run "$name" "$ex" --policy price --migration "${name#price-}" ;;
    esac
  done
  ;;
steady)
  # 1,300 tasks of ~0.7 s on three workers: about 5 minutes; no quota change.
  variant examples/replan-star-emulated.toml 1 drop "${TASKS:-1300}" > "$out/steady.toml"
  cal=${CALIBRATION:-$out/calibration.json}
  [ -f "$cal" ] || nice -n -10 "$tf" emulate "$out/steady.toml" calibrate --calibration-out "$cal" > "$out/calibrate.log" 2>&1
  nice -n -10 "$tf" emulate "$out/steady.toml" run --calibration "$cal" --policy lp --out "$out/steady" --quiet \
    > "$out/steady.log" 2>&1
  jq -r --arg load "$(load)" '"steady: \(.duration | floor) s, \(.replans | length) re-plans, fair \(.fair_throughput) tasks/s, ratio \(.fair_ratio) [load \($load)]", (.replans[] | "  re-plan at \(.at) s (\(.cause)): \(.node) \(.old_value) -> \(.new_value) s")' \
    "$out/steady/results.json"
  ;;
lan)
  for ex in examples/lan-*.toml; do
    name=$(basename "$ex" .toml)
    nice -n -10 "$tf" emulate "$ex" compare --policies lp --out "$out/$name" --timeout 900 --quiet > "$out/$name.log" 2>&1 ||
      echo "$name: exit $? (see $out/$name.log)"
    jq -r --arg n "$name" --arg load "$(load)" '"\($n): fair \(.fair_throughput) tasks/s, predicted \(.predicted_fair_throughput), ratio \(.fair_ratio) [load \($load)]"' \
      "$out/$name/lp/results.json"
  done
  ;;
*) echo "run.sh: unknown part '$part' (sim, star, steady or lan)" >&2; exit 2 ;;
esac
