#!/usr/bin/python3
"""The emulated re-planning star (docs/results/live-model.md): for each results.json,
the makespan, where the quota cut fell on the results' clock, the re-plans and how far
the makespan is from the best the platform as it ran allowed.

  docs/results/live-model/makespan.py RESULTS.json...

The cut is taken at the start of w1's first task that ran more than twice as long as
its first ten did. Best makespan = that time + the tasks left then / the optimum as the
run met it (sum over the workers of 1 / their median task time from 5 s after the cut:
the platform is CPU-bound at the workers, one core each).
"""
import json
import statistics as st
import sys

for path in sys.argv[1:]:
    r = json.load(open(path))
    tasks = sorted(r["tasks"], key=lambda x: x["completed_at"])
    total = len({t["id"] for t in tasks})
    w1 = [t for t in tasks if t["node"] == "w1"]
    base = st.median(t["compute_seconds"] for t in w1[:10])
    cut = next(t["started_at"] for t in w1 if t["compute_seconds"] > 2 * base)
    done = sum(1 for t in tasks if t["completed_at"] <= cut)
    nodes = {}
    for t in tasks:
        nodes.setdefault(t["node"], []).append(t)
    after = {n: st.median(t["compute_seconds"] for t in v if t["started_at"] > cut + 5) for n, v in nodes.items()}
    optimum = sum(1 / s for s in after.values())
    best = cut + (total - done) / optimum
    print(f"{path}: makespan {r['duration']:.1f} s, best {best:.1f} s ({r['duration'] / best:.3f}x), "
          f"cut at {cut:.1f} s, optimum as run {optimum:.3f} tasks/s, {len(tasks)} results of {total} distinct tasks, "
          f"late duplicates dropped {r['duplicates']}")
    print("  tasks per node: " + ", ".join(f"{n} {len(v)} (last {max(t['completed_at'] for t in v):.1f} s)"
                                         for n, v in sorted(nodes.items())))
    for p in r.get("replans", []):
        print(f"  re-plan at {p['at']:.1f} s ({p['at'] - cut:+.1f} s from the cut, {p['cause']}): {p['node']} "
              f"{p['old_value']:.3f} -> {p['new_value']:.3f} s, optimum {p['old_optimum']:.3f} -> {p['new_optimum']:.3f}")
