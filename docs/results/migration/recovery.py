#!/usr/bin/python3
"""Recovery after a load change, from a treefarm results.json (docs/results/migration.md).

Throughput in sliding windows of --window seconds (completions per second), from the
event on: the recovery time is the first time t >= event from which every window ending
at or after t + window (until the bag runs out, i.e. the last window ending before the
last tasks start draining: T_end - window) has a throughput within --tolerance of the new
optimum --optimum (tasks/s). Also prints the makespan and the tail (time from the moment
the last window was still within tolerance to the last completion).
Usage: recovery.py RESULTS.json --event 60 --optimum 1.69 [--window 10] [--tolerance 0.1]
"""
import argparse
import bisect
import json

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("results")
p.add_argument("--event", type=float, required=True, help="seconds: when the load changed")
p.add_argument("--optimum", type=float, required=True, help="tasks/s: LP optimum after the change")
p.add_argument("--window", type=float, default=10.0, help="seconds per throughput window")
p.add_argument("--tolerance", type=float, default=0.1, help="fraction of the optimum")
p.add_argument("--json", action="store_true", help="print one JSON object")
a = p.parse_args()

r = json.load(open(a.results))
times = sorted(t["completed_at"] for t in r["tasks"])
end = times[-1]
step = a.window / 10


def rate(t0):
    lo = bisect.bisect_left(times, t0)
    hi = bisect.bisect_left(times, t0 + a.window)
    return (hi - lo) / a.window


starts = []
t = a.event
while t + a.window <= end:
    starts.append(t)
    t += step
ok = [rate(s) >= (1 - a.tolerance) * a.optimum for s in starts]
# The steady part ends when the bag is drained: the last window start that is within
# tolerance. Recovery: the first start from which all windows up to that point are ok,
# counting from the event.
last_ok = max((i for i, v in enumerate(ok) if v), default=None)
recovery = None
if last_ok is not None:
    first = last_ok
    while first > 0 and ok[first - 1]:
        first -= 1
    recovery = starts[first] - a.event
mean_after = sum(1 for x in times if x >= a.event) / (end - a.event)
out = {
    "results": a.results,
    "makespan_s": end,
    "recovery_s": recovery,
    "tail_s": None if last_ok is None else end - (starts[last_ok] + a.window),
    "mean_throughput_after_event": mean_after,
    "optimum_after_event": a.optimum,
    "window_s": a.window,
}
if a.json:
    print(json.dumps(out))
else:
    for k, v in out.items():
        print(f"{k}: {v}")
