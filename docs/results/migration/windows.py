#!/usr/bin/python3
"""Throughput in consecutive windows after a load change, from a treefarm results.json.

Prints, for windows of --window seconds starting at the event: completions per second
and the fraction of --optimum (tasks/s, the new LP optimum); then the time from the event
to the end of the first window within --tolerance of the optimum (recovery), the time
from the event to the last window start still within it (how long the platform held the
optimum), the tail after that, the makespan and the mean throughput after the event.
Usage: windows.py RESULTS.json --event 39 --optimum 1.89 [--window 10] [--tolerance 0.1] [--json]
"""
import argparse
import bisect
import json

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("results")
p.add_argument("--event", type=float, required=True, help="seconds (results clock) of the change")
p.add_argument("--optimum", type=float, required=True, help="tasks/s: the LP optimum after the change")
p.add_argument("--window", type=float, default=10.0, help="seconds per window")
p.add_argument("--tolerance", type=float, default=0.1, help="fraction of the optimum")
p.add_argument("--json", action="store_true", help="one JSON object")
a = p.parse_args()

times = sorted(t["completed_at"] for t in json.load(open(a.results))["tasks"])
end = times[-1]
rows = []
t = a.event
while t < end:
    n = bisect.bisect_left(times, t + a.window) - bisect.bisect_left(times, t)
    width = min(a.window, end - t) if t + a.window > end else a.window
    rows.append((t, n / width))
    t += a.window
ok = [r >= (1 - a.tolerance) * a.optimum for _, r in rows]
first = next((i for i, v in enumerate(ok) if v), None)
held = None
if first is not None:
    last = first
    while last + 1 < len(ok) and ok[last + 1]:
        last += 1
    held = rows[last][0] + a.window
out = {
    "results": a.results,
    "windows": [{"start_s": round(s, 1), "tasks_per_s": round(r, 3), "of_optimum": round(r / a.optimum, 3)} for s, r in rows],
    "recovery_s": None if first is None else rows[first][0] + a.window - a.event,
    "held_until_s": held,
    "tail_s": None if held is None else max(0.0, end - held),
    "makespan_s": end,
    "mean_throughput_after_event": sum(1 for x in times if x >= a.event) / (end - a.event),
    "optimum_after_event": a.optimum,
}
if a.json:
    print(json.dumps(out))
else:
    print(a.results)
    for w in out["windows"]:
        print(f"  [{w['start_s']:7.1f} s, +{a.window:g}) {w['tasks_per_s']:6.2f} tasks/s  {100 * w['of_optimum']:5.1f} %")
    for k in ("recovery_s", "held_until_s", "tail_s", "makespan_s", "mean_throughput_after_event", "optimum_after_event"):
        print(f"  {k}: {out[k]}")
