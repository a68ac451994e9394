#!/usr/bin/env bash
# The prediction check: RUNS consecutive `treefarm run EXPERIMENT --calibrate`
# (each calibrates in place, then runs, and writes the LP's prediction beside the
# measurement in results.json), each within ±TOLERANCE of its prediction. Per run it
# prints the predicted and measured fair throughput (tasks/s per unit of weight), their
# ratio, the prediction interval when the calibration has one, and the 1-minute load
# average before the run; then how many runs were inside. Exit code 1 if one was not,
# 2 if the binary or the experiment is missing, 3 if a run failed.
# Run it on a quiet machine, from the repository's root:
#   env -u OPENBLAS_CORETYPE tools/fidelity-check.sh [BUILD_DIR=build] [RUNS=5] [TOLERANCE=0.05] [EXPERIMENT=examples/quickstart.toml]
# Set KEEP=DIR to keep every run's output (calibration.json, results.json, logs) in DIR.
# Set DRIFT_SECONDS=S to first measure for S seconds how steady the machine's own speed is
# (`treefarm bench drift --probe both`, S >= 30): the share of checks an exact calibration would land
# inside the band on this machine, the floor under the runs' figures (docs/calibration.md);
# its JSON is kept as DIR/drift.json.
set -euo pipefail
build=${1:-build}
runs=${2:-5}
tolerance=${3:-0.05}
experiment=${4:-examples/quickstart.toml}
treefarm="$build/bin/treefarm"
[[ -x $treefarm ]] || { echo "fidelity-check: $treefarm not found (build it first)" >&2; exit 2; }
[[ -f $experiment ]] || { echo "fidelity-check: $experiment not found" >&2; exit 2; }
if [[ -n ${KEEP:-} ]]; then
  out=$KEEP
  mkdir -p "$out"
else
  out=$(mktemp -d /tmp/treefarm-fidelity-XXXXXX)
  trap 'rm -rf "$out"' EXIT
fi
if [[ ${DRIFT_SECONDS:-0} != 0 ]]; then
  drift=$("$treefarm" bench drift --probe both --seconds "$DRIFT_SECONDS" --tolerance "$tolerance" --runs "$runs" --json)
  printf '%s\n' "$drift" >"$out/drift.json"
  /usr/bin/python3 -c '
import json, sys
j = json.loads(sys.argv[1])
def floor(what, a, s):
    if not a["pairs"]:
        return "machine %s: measured too short for the windows (DRIFT_SECONDS >= 30)" % what
    w = next((w["cv"] for w in a["window_spread"] if w["seconds"] >= 10), a["chunk_cv"])
    return ("machine %s: over 10 s windows it spreads %.1f %%; %d stall(s), the longest %.1f s; an exact calibration "
            "lands within the band in %.0f %% of checks, %d in a row %.0f %% (treefarm bench drift, %s s)"
            % (what, w * 100, s["episodes"], s["longest_seconds"], a["inside"] * 100, int(sys.argv[2]),
               a["all_inside"] * 100, sys.argv[3]))
print(floor("compute (%.1f GFLOP/s on %d cores)" % (j["gflops"], j["cores"]), j["analysis"], j["stalls"]))
c = j["copy"]
print(floor("kernel copy (%.2f GB/s)" % (c["bytes_per_s"] / 1e9), c["analysis"], c["stalls"]))
' "$drift" "$runs" "$DRIFT_SECONDS"
fi
inside=0
printf '%4s %8s %12s %12s %8s %22s %s\n' run load predicted measured ratio interval verdict
for i in $(seq 1 "$runs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  set +e
  "$treefarm" run "$experiment" --calibrate --out "$out/run-$i" --quiet >"$out/run-$i.log" 2>&1
  rc=$?
  set -e
  if [[ $rc -ne 0 || ! -f $out/run-$i/results.json ]]; then
    echo "fidelity-check: run $i failed (exit code $rc); its output: $out/run-$i.log" >&2
    KEEP=${KEEP:-kept}; trap - EXIT
    exit 3
  fi
  # The interval: the LP at both ends of the calibration's spread (treefarm predict).
  "$treefarm" predict "$experiment" --calibration "$out/run-$i/calibration.json" --json >"$out/run-$i.predict.json" \
    2>/dev/null || true
  line=$(/usr/bin/python3 - "$out/run-$i/results.json" "$tolerance" "$out/run-$i.predict.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
tol = float(sys.argv[2])
try:
    iv = json.load(open(sys.argv[3])).get("fair_throughput_interval")
except Exception:
    iv = None
p = r.get("predicted_fair_throughput")
m = r.get("fair_throughput", 0.0)
if not p:
    print("- %.3f - - no-prediction" % m)
    sys.exit(0)
ratio = m / p
# no space inside: the shell's read splits the line on spaces
ivs = "[%.2f,%.2f]" % (iv["low"], iv["high"]) if isinstance(iv, dict) else "-"
print("%.3f %.3f %.3f %s %s" % (p, m, ratio, ivs, "inside" if abs(ratio - 1) <= tol else "OUTSIDE"))
EOF
)
  read -r predicted measured ratio interval verdict <<<"$line"
  printf '%4s %8s %12s %12s %8s %22s %s\n' "$i" "$load" "$predicted" "$measured" "$ratio" "$interval" "$verdict"
  [[ $verdict == inside ]] && inside=$((inside + 1))
done
echo "fidelity-check: $inside of $runs runs within ±$(awk -v t="$tolerance" 'BEGIN {print t * 100}') % of the prediction ($experiment)"
[[ $inside -eq $runs ]]
