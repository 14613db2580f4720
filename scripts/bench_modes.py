"""The machine's modes for scripts/bench.py: each case run is classed fast or slow by the probe taken right
before it (rnic-baseline --probe: net_ring forwarding of 138 B frames, and memcpy), each figure is paired with
the probes of its own mode, every target is judged per mode, and a case whose runs spread more than 1.3x is
flagged with the probe of every run, so that a mode switch shows as the cause or is ruled out.

The split: the two-means split of the probes' log forwarding rates (the 1-D optimum: every cut of the sorted
rates tried), taken as two modes only when the gap at the cut is at least MIN_GAP and the two clusters'
geometric means are at least MIN_SEPARATION apart; otherwise one mode, which the probes alone cannot name
fast or slow (a --split from an earlier run can).
"""
import math
import statistics

FAST, SLOW, ONE = "fast", "slow", "one"
MIN_GAP = 1.15          # the fastest slow probe to the slowest fast one
MIN_SEPARATION = 1.3    # the clusters' geometric means
SPREAD = 1.3            # a case's max/min beyond which it is flagged


def split(rates, given=None):
    """The split of the probe rates: a dict with "threshold" (a rate: at or above it fast; None for one mode),
    "how" (what decided it), and for a found split the clusters' centres and the gap."""
    if given is not None:
        return {"threshold": given, "how": f"given (--split {given})"}
    xs = sorted(math.log(r) for r in rates if r > 0)
    best = None
    for cut in range(1, len(xs)):
        lo, hi = xs[:cut], xs[cut:]
        sse = sum((x - statistics.fmean(lo)) ** 2 for x in lo) + sum((x - statistics.fmean(hi)) ** 2 for x in hi)
        if best is None or sse < best[0]:
            best = (sse, cut)
    if best is None:
        return {"threshold": None, "how": f"one mode ({len(xs)} probe{'s' if len(xs) != 1 else ''})"}
    lo, hi = xs[:best[1]], xs[best[1]:]
    gap = math.exp(hi[0] - lo[-1])
    separation = math.exp(statistics.fmean(hi) - statistics.fmean(lo))
    found = {"slow_centre": math.exp(statistics.fmean(lo)), "fast_centre": math.exp(statistics.fmean(hi)),
             "gap": gap, "separation": separation, "slow_runs": len(lo), "fast_runs": len(hi)}
    if gap < MIN_GAP or separation < MIN_SEPARATION:
        found.update(threshold=None, how=f"one mode (best split: gap {gap:.2f}x < {MIN_GAP} or centres "
                     f"{separation:.2f}x < {MIN_SEPARATION} apart)")
        return found
    found.update(threshold=math.exp((lo[-1] + hi[0]) / 2),
                 how=f"two-means on log rate: gap {gap:.2f}x, centres {separation:.2f}x apart")
    return found


def mode_of(rate, sp):
    if sp["threshold"] is None:
        return ONE
    return FAST if rate >= sp["threshold"] else SLOW


def modes_seen(sp):
    return [ONE] if sp["threshold"] is None else [FAST, SLOW]


def per_mode(runs, sp):
    """runs: [{"value", "probe", "copy"}] of one figure ("copy" may be left out: then None). Per mode: the runs'
    values, and the medians of the value, of the probes' forwarding and of their memcpy; None for a mode not
    seen."""
    out = {}
    for m in modes_seen(sp):
        rs = [r for r in runs if mode_of(r["probe"], sp) == m]
        out[m] = None if not rs else {
            "runs": len(rs), "values": [r["value"] for r in rs],
            "value": statistics.median(r["value"] for r in rs),
            "forward": statistics.median(r["probe"] for r in rs),
            "copy": statistics.median(r["copy"] for r in rs) if all("copy" in r for r in rs) else None}
    return out


def spread(values):
    return max(values) / min(values) if values and min(values) > 0 else None


def spread_flag(name, runs, sp, limit=SPREAD):
    """The flag of a figure whose runs spread more than limit (max/min overall or within a mode), with what
    explains it: None when it does not spread."""
    overall = spread([r["value"] for r in runs])
    within = {}
    for m in modes_seen(sp):
        vs = [r["value"] for r in runs if mode_of(r["probe"], sp) == m]
        within[m] = spread(vs) if len(vs) > 1 else None
    wide = [m for m, s in within.items() if s is not None and s > limit]
    if (overall is None or overall <= limit) and not wide:
        return None
    if wide:
        cause = "spread within " + " and ".join(f"the {m} mode ({within[m]:.2f}x)" for m in wide) + \
            ": not the mode switch"
    elif sp["threshold"] is None:
        cause = "one mode by the probes: not a mode switch the probes saw"
    else:
        cause = "each mode within the bound: the mode switch"
    return {"flag": name, "spread": overall, "within": within, "cause": cause,
            "runs": [{"value": r["value"], "probe_mpps": r["probe"], "mode": mode_of(r["probe"], sp)}
                     for r in runs]}


def judge(targets, figures, sp):
    """Every target per mode. targets: (name, against, op, bound, label); against a figure's name, "forward" (the
    same mode's probe forwarding rate) or "copy" (its memcpy Gb/s), or None (the value itself). figures:
    name -> the runs per_mode takes. Returns one dict per target and mode, "seen": False where a figure or the
    one it is compared with has no run in that mode, else with the figure's runs and values in that mode."""
    out = []
    pm = {name: per_mode(runs, sp) for name, runs in figures.items()}
    for name, against, op, bound, label in targets:
        if name not in pm or (against not in (None, "forward", "copy") and against not in pm):
            continue
        for m in modes_seen(sp):
            mine = pm[name][m]
            other = pm[against][m] if against in pm else None
            res = {"target": name, "against": against, "mode": m, "issue": label,
                   ("least" if op == ">=" else "most"): bound}
            if mine is None or (against in pm and other is None):
                out.append(dict(res, seen=False))
                continue
            if against is None:
                value = mine["value"]
            elif against in ("forward", "copy"):
                value = mine["value"] / mine[against]
            else:
                value = mine["value"] / other["value"]
            out.append(dict(res, seen=True, value=value, met=value >= bound if op == ">=" else value <= bound,
                            runs=mine["runs"], values=mine["values"]))
    return out


def judge_all(targets, figures, sp):
    """judge over every run as one ("mode": "all"), then per mode."""
    return [dict(c, mode="all") for c in judge(targets, figures, {"threshold": None})] + judge(targets, figures, sp)


def within_of_median(runs, limit=SPREAD):
    """Whether every run is within limit of the runs' median (both ways)."""
    med = statistics.median(r["value"] for r in runs)
    return all(med / limit <= r["value"] <= med * limit for r in runs)
