#!/bin/sh
# Emulated recovery after w1's quota drops to a quarter (docs/results/migration.md,
# "Emulated"). Root; from the repository root: docs/results/migration/emu-run.sh [BUILD_DIR]
# Each step at nice -10 so that builds on a shared machine do not take the quota.
# MODES (default "off pull push"): each MIGRATION or MIGRATION:BALANCE, e.g. "pull:mll";
# the optimum after the event is taken from the median task times of all of them.
set -eu
B=${1:-build}
D=docs/results/migration/emu
X=examples/migration-quota-emulated.toml
mkdir -p "$D"
nice -n -10 "$B/bin/treefarm" emulate "$X" calibrate --calibration-out "$D/calibration.json" --out "$D/calibrate" --quiet
MODES=${MODES:-off pull push}
name() { m=${1%%:*}; case $1 in *:*) echo "$m-${1#*:}" ;; *) echo "$m" ;; esac; }
for mode in $MODES; do
  n=$(name "$mode")
  m=${mode%%:*}
  b=off
  case $mode in *:*) b=${mode#*:} ;; esac
  rm -rf "$D/run-$n"
  nice -n -10 "$B/bin/treefarm" emulate "$X" run --migration $m --balance $b --out "$D/run-$n" --quiet > "$D/run-$n.log" 2>&1
done
RUNS=""
for mode in $MODES; do RUNS="$RUNS $D/run-$(name "$mode")/results.json"; done
# The event lands at launch + 40 s, about 39 s on the master's clock (the results'),
# read off the w1 task that straddles it (docs/results/migration.md).
EV=${EVENT:-39}
/usr/bin/python3 docs/results/migration/emu-optimum.py "$D/calibration.json" "$D/calibration-after.json" --event "$EV" $RUNS
"$B/bin/treefarm" predict "$X" --calibration "$D/calibration-after.json" --json > "$D/after-predict.json"
OPT=$(/usr/bin/python3 -c "import json;print(json.load(open('$D/after-predict.json'))['fair_throughput'])")
echo "LP optimum after the event (as measured): $OPT tasks/s"
for mode in $MODES; do
  echo "== $mode"
  /usr/bin/python3 docs/results/migration/windows.py "$D/run-$(name "$mode")/results.json" --event "$EV" --optimum "$OPT" --window 10
done
