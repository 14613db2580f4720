#!/usr/bin/python3
"""Congestion control's own figures (doc/congestion.md, doc/performance.md), rnic-perf in loopback:

    scripts/bench_cc.py ab   [--build DIR] [--runs N] [--seconds S] [--turn-ms MS] [--qps 1,65536] [--out FILE.jsonl]
    scripts/bench_cc.py rate [--build DIR] [--runs N] [--seconds S] [--rates 0.1,1,10,20] [--out FILE.jsonl]

ab: the cost of DCQCN with no congestion. 64 B RC WRITE message rate with DCQCN on (NP and RP, as `--cc
dcqcn`, the default: no CE marks, so no CNP) against off (as `--cc none`), for each QP count, within one run:
rnic-perf's --cc-ab switches both devices' DCQCN (rnic_set_cc) every --turn-ms and compares each turn with
DCQCN on against the mean of the turns off on both sides of it (a drift of the machine cancels), the run's
figure the median of those ratios. Separate runs cannot show a few per cent here: the machine's modes move a
run by 1.5-2x and go with the process (where the host put its two lcores), while the turns of one run share
it. The target: the median of the runs' figures within 5 % of 1, with at least 3 runs.

rate: a QP's rate_limit held over the run. One QP keeps 16 WRITEs of 64 KB in flight with rnic-perf's
--rate_limit X (Gbit/s, on the wire: frames with their headers) for --seconds (5 by default); the figure is the
wire rate by the clock (rnic-perf's goodput times the frames' bytes over their payload) over X, the target
1 +- 0.05. Each run is also measured without a limit first: a rate the engine cannot reach on this machine at
that moment says so (the run is "unreachable"), rather than failing the pacer. The engine's lcore's share of a
CPU over the run (its thread's schedstat) is printed beside each run: by the clock a pacer can only give what
the lcore ran.

JSON lines: one per run, then one "summary" per figure with "met"; --check: exit 1 when a target is missed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from bench import EAL, json_lines
from bench_ports import HEADERS_MIDDLE

# A 64 KB WRITE at MTU 4096: 16 frames of a middle packet's headers, and the first one's RETH (16 B)
WIRE_PER_PAYLOAD = (65536 + 16 * HEADERS_MIDDLE + 16) / 65536


def worker_cpu_ns(pid):
    """The run time of the process's engine worker (rte-worker-1), ns, or None."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != "rte-worker-1":
                    continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return None


def perf_run(perf, args, seconds, engine=()):
    """rnic-perf's JSON result, and the worker's share of a CPU over the last part of the run (None unknown)."""
    cmd = [perf] + args + ["--json", "--"] + EAL + (["--"] + list(engine) if engine else [])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    share = {}

    def sample():
        # Setting up 64K QPs takes seconds before the measured time: sample the last part of the run only
        end = time.monotonic() + 120
        first = None
        while p.poll() is None and time.monotonic() < end:
            c = worker_cpu_ns(p.pid)
            t = time.monotonic()
            if c is not None:
                if first is None:
                    first = (c, t)
                elif t - first[1] > 0.5:
                    share["cpu"] = (c - first[0]) / 1e9 / (t - first[1])
            time.sleep(0.25)
    th = threading.Thread(target=sample)
    th.start()
    try:
        out, err = p.communicate(timeout=seconds + 180)
    except subprocess.TimeoutExpired:
        p.kill()
        raise SystemExit(f"bench_cc: rnic-perf {' '.join(args)} did not end")
    th.join()
    if p.returncode != 0:
        raise SystemExit(f"bench_cc: rnic-perf {' '.join(args)} failed ({p.returncode}):\n{out}\n{err}")
    res = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if not res:
        raise SystemExit(f"bench_cc: rnic-perf {' '.join(args)} printed no result")
    return res[-1], share.get("cpu")


def ab(a, perf, emit):
    ok = True
    for q in [int(x) for x in a.qps.split(",")]:
        depth = 512 if q == 1 else 16
        args = ["-o", "write", "-s", "64", "-q", str(q), "-t", str(depth), "-D", str(a.seconds),
                "--cc-ab", str(a.turn_ms), "--max-qp", str(max(q, 4096)), "--max-cqe", str(1 << 22)]
        ratios = []
        for r in range(a.runs):
            d, cpu = perf_run(perf, args, a.seconds)
            t = d["cc_ab"]
            emit({"case": f"write_64B_{q}qp", "run": r, "msg_rate_Mpps": d["msg_rate_Mpps"], "worker_cpu": cpu,
                  "turns": t["turns"], "pairs": t["pairs"], "on_Mpps": t["on_Mpps"], "off_Mpps": t["off_Mpps"],
                  "on_over_off": t["ratio"], "pair_min": t["ratio_min"], "pair_max": t["ratio_max"]})
            if t["pairs"] > 0:
                ratios.append(t["ratio"])
        line = {"summary": f"cc_on_off_write_64B_{q}qp", "runs": len(ratios), "turn_ms": a.turn_ms,
                "ratios": ratios, "target": "the median of the runs' on / off within 5 % of 1 (3 runs or more)"}
        if ratios:
            med = statistics.median(ratios)
            met = abs(med - 1) <= 0.05 if len(ratios) >= 3 else None
            ok &= met is not False
            line.update(on_over_off=med, met=met)
        emit(line)
    return ok


def rate(a, perf, emit):
    ok = True
    base = ["-o", "write", "-s", "65536", "-m", "4096", "-t", "16", "-D", str(a.seconds)]
    for x in [float(v) for v in a.rates.split(",")]:
        seen = []
        for r in range(a.runs):
            free, _ = perf_run(perf, base, a.seconds)
            d, cpu = perf_run(perf, base + ["--rate_limit", str(x)], a.seconds)
            free_wire = free["bw_avg_Gbps"] * WIRE_PER_PAYLOAD
            wire = d["bw_avg_Gbps"] * WIRE_PER_PAYLOAD
            line = {"case": f"rate_limit_{x:g}G", "run": r, "limit_Gbps": x, "wire_Gbps": wire,
                    "goodput_Gbps": d["bw_avg_Gbps"], "ratio": wire / x, "unlimited_wire_Gbps": free_wire,
                    "worker_cpu": cpu, "reachable": free_wire >= 1.05 * x}
            emit(line)
            seen.append(line)
        reach = [s["ratio"] for s in seen if s["reachable"]]
        med = statistics.median(reach) if reach else None
        met = med is not None and all(abs(v - 1) <= 0.05 for v in reach)
        if reach:
            ok &= met
        emit({"summary": f"rate_limit_{x:g}G", "limit_Gbps": x, "runs": len(seen), "reachable_runs": len(reach),
              "median_ratio": med, "ratios": reach, "target": "every reachable run 1 +- 0.05",
              "met": met if reach else None})
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["ab", "rate"])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=None, help="each run (ab 20, rate 5)")
    ap.add_argument("--qps", default="1,65536")
    ap.add_argument("--rates", default="0.1,1,10,20", help="rate limits, Gbit/s")
    ap.add_argument("--turn-ms", type=int, default=250, help="ab: DCQCN on or off for this long at a time")
    ap.add_argument("--out", default=None)
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    a = ap.parse_args()
    if a.seconds is None:
        a.seconds = 20 if a.what == "ab" else 5
    perf = os.path.join(a.build, "app/rnic-perf/rnic-perf")
    out = open(a.out, "w") if a.out else None
    emit = json_lines(out)
    ok = ab(a, perf, emit) if a.what == "ab" else rate(a, perf, emit)
    if out:
        out.close()
    return 1 if a.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
