#!/usr/bin/python3
"""A cost model of the data path from rnic-perf's per-stage busy times (issue 22, doc/performance.md).

    scripts/cost_model.py --build build [--seconds 2] [--qps 65536] [--repeat N] [--save RUN.json]  # measure
    scripts/cost_model.py --data RUN.json                                                        # a saved run

Each case is an rnic-perf WRITE run in loopback (--repeat: that many, interleaved) with --hist-out: 64 B and 4 KB with 1 QP, 64 B with many
QPs, each under the stage map `one` (every stage on one engine lcore, the application on the other) and
`host` (doorbell, requester and completer on the application's lcore, parser and responder on the worker:
two engine lcores). From the histograms, per device and stage: units (WQEs, frames, ACKs) per message and
busy ns per message (units per message times the mean busy ns of the lowest 99 % of units). The model:

  ns per message of stage k   = a_k + b_k * message bytes + q_k * [many QPs]     (least squares over the
                                map's runs: b is the copies' and ICRC's per byte, and in the ACK stages the
                                change of coalescing with size; q the misses many QPs add)
  ns per message on lcore L   = sum of the stages L runs + o_lcore (each lcore with stages: the poll loop,
                                the doorbell stage, rings, TX, mbuf frees: unstamped)
                                + o_app on the application's lcore (its posts and polls)
  predicted message rate      = 1 / max over lcores (the bottleneck lcore's sum)

o_lcore and o_app are fitted to the measured rates (median of each case's runs): the smallest largest error.
Lcores per end for 100 Gb/s: each device's stages in the map `one` plus o_lcore, times the message rate
100 Gb/s carries at that size (the frame's headers and the Ethernet gap included), at 1 QP and many QPs
(at 4 KB with the many-QP term measured at 64 B), sharding over lcores taken as free.
Output: JSON lines (fit, case, overhead, predict, check); exit 1 when a case is predicted outside --tolerance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

EAL = ["--no-huge", "-m", "6144", "--no-pci", "--no-shconf", "--log-level=error"]
# Stages on the application's lcore in each map; the rest on the worker (rnic-perf, rnic_stage_map.c). The
# doorbell stage has no histogram: its cost is in the lcores' overhead.
ON_APP = {"one": set(), "host": {"requester", "completer"}}
LCORES = {"one": 1, "host": 2}
# Bytes a frame adds on the wire to a WRITE's payload: preamble + gap 20, Ethernet 14, FCS 4, IPv4 20,
# UDP 8, BTH 12, RETH 16, ICRC 4.
WIRE_OVERHEAD = 98
LINE_BPS = 100e9
KEEP = 0.99


def trimmed_mean(mids, buckets, keep=KEEP):
    """Mean ns of the lowest keep share of the units: a unit whose lcore was preempted (the machine is
    shared, a time slice is milliseconds) would otherwise outweigh thousands of ordinary ones."""
    total = sum(c for _, c in buckets)
    left, ns = keep * total, 0.0
    for b, c in sorted(buckets):
        take = min(c, left)
        ns += mids[b] * take
        left -= take
        if left <= 0:
            break
    return ns / (keep * total)


def stage_ns(data):
    """Each case's busy ns per message per stage (device/stage), from its raw histograms."""
    mids = [(lo + hi) / 2 for lo, hi in data["bucket_ns"]]
    for c in data["cases"]:
        c["ns"] = {k: h["count"] / c["messages"] * trimmed_mean(mids, h["buckets"])
                   for k, h in c["stages"].items() if h["count"] != 0}
    return data["cases"]


def solve(a, b):
    """Least squares through the normal equations, by Gaussian elimination (no numpy here)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * y for r, y in zip(a, b))]
         for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        if abs(m[i][i]) < 1e-12:
            raise ValueError("singular fit: the cases do not tell the terms apart")
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [x - f * y for x, y in zip(m[r], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit_stages(cases):
    """{(map, stage): {"a": ns, "b": ns per byte, "q": ns}} per message, least squares over the map's cases:
    a stage costs more where its lines cross between lcores, so each map has its own."""
    fit = {}
    for m, key in sorted({(c["map"], k) for c in cases for k in c["ns"]}):
        rows = [c for c in cases if key in c["ns"] and c["map"] == m]
        use_b = len({c["size"] for c in rows}) > 1
        use_q = len({c["many"] for c in rows}) > 1
        x = [[1.0] + ([float(c["size"])] if use_b else []) + ([float(c["many"])] if use_q else [])
             for c in rows]
        coef = solve(x, [c["ns"][key] for c in rows])
        fit[(m, key)] = {"a": coef[0], "b": coef[1] if use_b else 0.0, "q": coef[-1] if use_q else 0.0}
    return fit


def fitted_ns(fit, stage_map, key, size, many):
    f = fit[(stage_map, key)]
    return f["a"] + f["b"] * size + (f["q"] if many else 0.0)


def lcore_ns(case, fit, o_lcore, o_app):
    """ns per message of each lcore, "app" and "worker", under the case's map."""
    load = {"app": o_app, "worker": 0.0}
    for key in case["ns"]:
        load["app" if key.split("/")[1] in ON_APP[case["map"]] else "worker"] += \
            fitted_ns(fit, case["map"], key, case["size"], case["many"])
    for where in ("app", "worker"):
        if where == "worker" or ON_APP[case["map"]]:
            load[where] += o_lcore
    return load


def predict(case, fit, o_lcore, o_app):
    return 1e3 / max(lcore_ns(case, fit, o_lcore, o_app).values())


def by_name(cases):
    """{case name: [its runs]} in first-seen order."""
    out = {}
    for c in cases:
        out.setdefault(c["name"], []).append(c)
    return out


def median(xs):
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def spread(runs):
    """A case's fastest run over its slowest: above 1.3 the machine's load moved the rate (bench.py's flag),
    which the trimmed stage times do not see."""
    return round(max(r["mpps"] for r in runs) / min(r["mpps"] for r in runs), 2)


def errors(groups, fit, o_lcore, o_app):
    """{name: predicted / median measured - 1}"""
    return {n: predict(runs[0], fit, o_lcore, o_app) / median([r["mpps"] for r in runs]) - 1
            for n, runs in groups.items()}


def fit_overhead(groups, fit):
    """(o_lcore, o_app) with the smallest largest |error|: a grid, refined around its best point."""
    def worst(p):
        return max(abs(e) for e in errors(groups, fit, p[0], p[1]).values())

    top = 2e3 * max(1.0 / r["mpps"] for runs in groups.values() for r in runs)
    best, step = (0.0, 0.0), top / 40
    for _ in range(5):
        grid = {(max(0.0, best[0] + i * step), max(0.0, best[1] + j * step)) for i in range(-40, 41)
                for j in range(-40, 41)}
        best = min(sorted(grid), key=worst)
        step /= 10
    return best


def per_end(cases, fit, o_lcore, size, many):
    """Lcores per end for 100 Gb/s of WRITEs of size: each device's stages' fitted ns per message in the map
    `one` (an end's stages run to completion on its lcores, QPs sharded over them) plus one lcore overhead,
    times the message rate the line carries at that size; sharding taken as free."""
    rate = LINE_BPS / 8 / (size + WIRE_OVERHEAD)
    ends = {}
    for dev, end in (("rnic0", "requester_end"), ("rnic1", "responder_end")):
        keys = [k for m, k in fit if m == "one" and k.startswith(dev + "/")]
        ns = o_lcore + sum(fitted_ns(fit, "one", k, size, many) for k in keys)
        ends[end] = {"ns_per_msg": round(ns, 1), "lcores": round(rate * ns * 1e-9, 2)}
    return {"size": size, "many_qps": many, "line_mpps": round(rate / 1e6, 3), **ends}


def model(data, tolerance):
    cases = stage_ns(data)
    groups = by_name(cases)
    fit = fit_stages(cases)
    o_lcore, o_app = fit_overhead(groups, fit)
    out = [{"fit": k[1], "map": k[0], "a_ns": round(v["a"], 2), "b_ns_per_byte": round(v["b"], 5),
            "many_qps_ns": round(v["q"], 2)} for k, v in fit.items()]
    out.append({"overhead": {"o_lcore_ns": round(o_lcore, 2), "o_app_ns": round(o_app, 2)}})
    errs = errors(groups, fit, o_lcore, o_app)
    for name, runs in groups.items():
        c = runs[0]
        load = lcore_ns(c, fit, o_lcore, o_app)
        measured = median([r["mpps"] for r in runs])
        out.append({"case": name, "map": c["map"], "lcores": LCORES[c["map"]], "size": c["size"], "qps": c["qps"],
                    "runs_mpps": [r["mpps"] for r in runs], "measured_mpps": measured, "spread": spread(runs),
                    "predicted_mpps": round(predict(c, fit, o_lcore, o_app), 4), "error": round(errs[name], 4),
                    "ns_per_msg": {k: round(v, 1) for k, v in load.items()}, "bottleneck": max(load, key=load.get),
                    "stamped_share": round(median([sum(r["ns"].values()) * r["mpps"] / 1e3 for r in runs]), 3)})
    for size, many in ((4096, False), (64, False), (4096, True), (64, True)):
        out.append({"predict": "100 Gb/s", **per_end(cases, fit, o_lcore, size, many)})
    worst = max(abs(e) for e in errs.values())
    out.append({"check": "every case predicted within tolerance", "tolerance": tolerance,
                "worst_error": round(worst, 4), "pass": worst <= tolerance,
                "max_spread": max(spread(runs) for runs in groups.values())})
    return out


def measure(build, seconds, qps, repeat):
    """Run the cases, interleaved repeat times (the caller holds the DPDK lock): {"bucket_ns", "cases"}."""
    perf = os.path.join(build, "app/rnic-perf/rnic-perf")
    specs = []
    for stage_map in ("one", "host"):
        many = ["-s", "64", "-q", str(qps), "-t", "16", "--max-qp", str(max(qps, 4096)), "--max-cqe", str(1 << 22)]
        specs += [(f"write_64B_{stage_map}", stage_map, ["-s", "64", "-t", "512"], False),
                  (f"write_4KB_{stage_map}", stage_map, ["-s", "4096", "-t", "128"], False),
                  (f"write_64B_{qps}qp_{stage_map}", stage_map, many, True)]
    data = {"cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        hist = os.path.join(tmp, "hist.json")
        for _ in range(repeat):
            for name, stage_map, args, many in specs:
                cmd = [perf, "-o", "write", "-Q", "1", "-D", str(seconds), "--json", "--hist-out", hist,
                       "--stages", stage_map] + args + ["--", "-l", "0,1"] + EAL
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                if res.returncode != 0:
                    raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()[-500:]}")
                run = json.loads([ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1])
                with open(hist) as f:
                    doc = json.load(f)
                data["bucket_ns"] = doc["bucket_ns"]
                data["cases"].append({
                    "name": name, "map": stage_map, "size": run["size"], "qps": run["qps"], "many": many,
                    "mpps": run["msg_rate_Mpps"], "messages": run["iterations"],
                    "stages": {f"{s['device']}/{s['stage']}": s["busy"] for s in doc["results"][0]["stages"]
                               if s["busy"]["count"] != 0}})
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--build", help="measure with this build's rnic-perf (hold /tmp/softrnic-dpdk.lock)")
    src.add_argument("--data", help="a run saved by --save")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--qps", type=int, default=65536, help="QPs of the many-QP case (default 65536)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of every case, interleaved (medians)")
    ap.add_argument("--save", help="write the measured cases here")
    ap.add_argument("--tolerance", type=float, default=0.15)
    a = ap.parse_args()
    if a.build:
        data = measure(a.build, a.seconds, a.qps, a.repeat)
        if a.save:
            with open(a.save, "w") as f:
                json.dump(data, f)
    else:
        with open(a.data) as f:
            data = json.load(f)
    out = model(data, a.tolerance)
    for line in out:
        print(json.dumps(line))
    return 0 if out[-1]["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
