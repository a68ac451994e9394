#!/usr/bin/python3
"""Re-convergence of the price policy after a platform change, from a treefarm results.json
(docs/results/price.md, "A node slows down during the run").

Per window of --window seconds, each application's completions per second ϱ_k and the
efficiency exp(Σ_k w_k·log(ϱ_k/ϱ_k*) / Σ_k w_k) — the weighted geometric mean of ϱ_k/ϱ_k*,
the measure of the price study — against the proportional-fair optimum of the platform in
force: --before (treefarm predict --objective proportional --json) until --event seconds,
--after from then on. The steady part ends with the first bag to run out (the last window
ending before the earliest time at which an application had 98% of its tasks completed;
its last few tasks straggle). Re-convergence time:
from the event to the start of the first window from which every window until that end has
an efficiency >= the threshold (0.95 and 0.97).
Usage: reconverge.py RESULTS.json --event 300 --before B.json --after A.json [--window 30] [--json]
"""
import argparse
import collections
import json
import math

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("results")
p.add_argument("--event", type=float, required=True, help="seconds: when the platform changed")
p.add_argument("--before", required=True, help="predict --json of the platform before the change")
p.add_argument("--after", required=True, help="predict --json of the platform after it")
p.add_argument("--window", type=float, default=30.0, help="seconds per window")
p.add_argument("--json", action="store_true", help="print one JSON object")
a = p.parse_args()

r = json.load(open(a.results))
apps = [x["name"] for x in r["apps"]]
weight = {x["name"]: x["weight"] for x in r["apps"]}


def optimum(path):
    return {x["name"]: x["throughput"] for x in json.load(open(path))["apps"]}


opt_before, opt_after = optimum(a.before), optimum(a.after)
done = collections.defaultdict(list)
count = collections.Counter()
for t in r["tasks"]:
    done[t["app"]].append(t["completed_at"])
    count[(int(t["completed_at"] // a.window), t["app"])] += 1
steady_end = min(sorted(done[k])[int(0.98 * (len(done[k]) - 1))] for k in apps)
rows = []
i = 0
while (i + 1) * a.window <= steady_end:
    t0 = i * a.window
    opt = opt_before if t0 + a.window <= a.event else opt_after
    rates = {k: count[(i, k)] / a.window for k in apps}
    if t0 < a.event < t0 + a.window:
        eff = None  # the window straddles the change
    elif any(rates[k] <= 0 for k in apps):
        eff = 0.0
    else:
        eff = math.exp(sum(weight[k] * math.log(rates[k] / opt[k]) for k in apps) / sum(weight.values()))
    rows.append({"start_s": t0, "rates": rates, "efficiency": eff})
    i += 1


def settled(threshold):
    after = [x for x in rows if x["start_s"] >= a.event]
    if not after or after[-1]["efficiency"] < threshold:
        return None
    first = len(after) - 1
    while first > 0 and after[first - 1]["efficiency"] >= threshold:
        first -= 1
    return after[first]["start_s"] - a.event


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


out = {
    "results": a.results,
    "window_s": a.window,
    "event_s": a.event,
    "steady_end_s": steady_end,
    "optimum_before": opt_before,
    "optimum_after": opt_after,
    "mean_efficiency_before": mean([x["efficiency"] for x in rows if x["start_s"] >= 2 * a.window and x["start_s"] + a.window <= a.event]),
    "mean_efficiency_after": mean([x["efficiency"] for x in rows if x["start_s"] >= a.event + 5 * a.window]),
    "reconverged_95_s": settled(0.95),
    "reconverged_97_s": settled(0.97),
    "windows": rows,
}
if a.json:
    print(json.dumps(out, indent=1))
else:
    print("window_s", *apps, "efficiency")
    for x in rows:
        e = "-" if x["efficiency"] is None else f"{x['efficiency']:.3f}"
        print(f"{x['start_s']:8.0f}", *[f"{x['rates'][k]:7.3f}" for k in apps], e)
    for k in ("optimum_before", "optimum_after"):
        print(k, " ".join(f"{n} {v:.3f}" for n, v in out[k].items()))
    for k in ("mean_efficiency_before", "mean_efficiency_after", "reconverged_95_s", "reconverged_97_s", "steady_end_s"):
        v = out[k]
        print(k, "never" if v is None and k.startswith("reconverged") else (f"{v:.3f}" if isinstance(v, float) else v))
