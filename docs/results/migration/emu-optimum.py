#!/usr/bin/python3
"""The new platform's calibration, measured in the emulated runs (docs/results/migration.md).

Writes a copy of CALIBRATION.json whose task_seconds are the median compute_seconds of
the tasks each worker started at least --settle seconds after the event, pooled over the
given runs' results.json: the platform as it ran after the change (the machine is shared,
so the quotas are ceilings and the calibration taken before the runs is an upper bound on
speed). `treefarm predict EXPERIMENT --calibration OUT` then gives the new LP optimum.
Usage: emu-optimum.py CALIBRATION.json OUT.json --event 39 RESULTS.json...
"""
import argparse
import json
import statistics

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("calibration")
p.add_argument("out")
p.add_argument("results", nargs="+")
p.add_argument("--event", type=float, required=True, help="seconds (results clock) of the change")
p.add_argument("--settle", type=float, default=5.0, help="seconds after the event before a task counts")
a = p.parse_args()

cal = json.load(open(a.calibration))
seconds = {}
for path in a.results:
    for t in json.load(open(path))["tasks"]:
        if t["started_at"] >= a.event + a.settle:
            seconds.setdefault((t["node"], t["app"]), []).append(t["compute_seconds"])
for node in cal["nodes"]:
    for app in list(node["task_seconds"]):
        xs = seconds.get((node["name"], app))
        if not xs:
            raise SystemExit(f"no task of {app} on {node['name']} after the event")
        before = node["task_seconds"][app]
        node["task_seconds"][app] = statistics.median(xs)
        print(f"{node['name']}: {app} {before:.3f} s/task calibrated -> {node['task_seconds'][app]:.3f} after the event "
              f"(median of {len(xs)})")
cal["measured_at"] = a.event + a.settle
json.dump(cal, open(a.out, "w"), indent=2)
