#!/usr/bin/python3
"""Congestion control's own figures (doc/congestion.md, doc/performance.md), rnic-perf in loopback:

    scripts/bench_cc.py ab   [--build DIR] [--runs N] [--seconds S] [--qps 1,65536] [--out FILE.jsonl]
    scripts/bench_cc.py rate [--build DIR] [--runs N] [--seconds S] [--rates 0.1,1,10,20] [--out FILE.jsonl]

ab: the cost of DCQCN with no congestion. 64 B RC WRITE message rate with `--cc dcqcn` (the default: NP and RP
on, no CE marks, so no CNP) against `--cc none`, for each QP count, in pairs taken back to back with the order
alternating (A B, B A, ...), so a slow spell of the shared machine lands on both halves of a pair. The
machine's modes (scripts/bench_modes.py) move a run by 1.5-2x, far more than the cost sought: each run is
classed by the probe taken right before it (as bench.py does), and a pair counts only when both its runs are
in one mode. The figure, per mode, is the median of its pairs' ratios (on/off); the target within 5 % of 1
in every mode with at least 3 pairs.

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

import bench_modes
from bench import EAL, PROBE_EAL, run_json

# A 64 KB WRITE at MTU 4096: 16 frames of Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4 and the first one's RETH 16
WIRE_PER_PAYLOAD = (65536 + 16 * (14 + 20 + 8 + 12 + 4) + 16) / 65536


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


def probe_mpps(a):
    """The machine's mode now: rnic-baseline's forwarding rate of the loopback ports (bench.py's probe)."""
    baseline = os.path.join(a.build, "app/rnic-baseline/rnic-baseline")
    got = {b["bench"]: b for b in run_json([baseline, "--probe", "--seconds", str(a.probe_seconds), "--"] + PROBE_EAL)}
    return got["baseline_forward"]["mpps"]


def ab(a, perf, emit):
    ok = True
    for q in [int(x) for x in a.qps.split(",")]:
        depth = 512 if q == 1 else 16
        args = ["-o", "write", "-s", "64", "-q", str(q), "-t", str(depth), "-D", str(a.seconds),
                "--max-qp", str(max(q, 4096)), "--max-cqe", str(1 << 22)]
        pairs = []
        for r in range(a.runs):
            got = {}
            for cc in (("dcqcn", "none") if r % 2 == 0 else ("none", "dcqcn")):
                probe = probe_mpps(a)
                d, cpu = perf_run(perf, args, a.seconds, ["--cc", cc])
                got[cc] = (d["msg_rate_Mpps"], probe)
                emit({"case": f"write_64B_{q}qp", "cc": cc, "run": r, "msg_rate_Mpps": got[cc][0], "probe_mpps": probe,
                      "worker_cpu": cpu})
            pairs.append(got)
        sp = bench_modes.split([x[1] for got in pairs for x in got.values()], a.split)
        by_mode = {}
        for r, got in enumerate(pairs):
            modes = {bench_modes.mode_of(x[1], sp) for x in got.values()}
            ratio = got["dcqcn"][0] / got["none"][0]
            mode = modes.pop() if len(modes) == 1 else None
            emit({"pair": f"write_64B_{q}qp", "run": r, "on_over_off": ratio, "mode": mode or "mixed"})
            if mode is not None:
                by_mode.setdefault(mode, []).append(ratio)
        for mode, ratios in sorted(by_mode.items()):
            med = statistics.median(ratios)
            met = abs(med - 1) <= 0.05 if len(ratios) >= 3 else None
            ok &= met is not False
            emit({"summary": f"cc_on_off_write_64B_{q}qp", "mode": mode, "pairs": len(ratios),
                  "median_on_over_off": med, "ratios": ratios, "target": "within 5 % of 1 (3 pairs or more)",
                  "met": met, "split": sp["how"]})
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
    ap.add_argument("--seconds", type=float, default=None, help="each run (ab 3, rate 5)")
    ap.add_argument("--qps", default="1,65536")
    ap.add_argument("--rates", default="0.1,1,10,20", help="rate limits, Gbit/s")
    ap.add_argument("--probe-seconds", type=float, default=0.25, help="ab: each half of the probe before a run")
    ap.add_argument("--split", type=float, default=None, help="ab: forwarding Mpps dividing the modes")
    ap.add_argument("--out", default=None)
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    a = ap.parse_args()
    if a.seconds is None:
        a.seconds = 3 if a.what == "ab" else 5
    perf = os.path.join(a.build, "app/rnic-perf/rnic-perf")
    out = open(a.out, "w") if a.out else None

    def emit(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
    ok = ab(a, perf, emit) if a.what == "ab" else rate(a, perf, emit)
    if out:
        out.close()
    return 1 if a.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
