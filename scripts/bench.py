#!/usr/bin/python3
"""The benchmark runner: in one run, the raw baseline (rnic-baseline: the loopback ports forwarding mbufs
with no RDMA processing, and one core's memcpy bandwidth) and softrnic's figures (rnic-perf --loopback),
each the median of --runs runs, printed as JSON lines and as a table with the ratios to the baseline.

    scripts/bench.py [--build DIR] [--runs N] [--seconds S] [--quick] [--out FILE.jsonl]

--quick: one run of each, one second each (a smoke test of the runner). The JSON lines (every run, then one
"summary" line per figure) also go to --out, for scripts/plot.py.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

# 64K QPs with 16 messages in flight each need about 2.5 GB of engine memory
EAL = ["-l", "0,1", "--no-huge", "-m", "6144", "--no-pci", "--no-shconf", "--log-level=error"]


def run_json(cmd, timeout=600, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--qp-scaling", default="1,1024,16384,65536", help="QP counts of the scaling run")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.quick:
        a.runs, a.seconds, a.qp_scaling = 1, 1, "1,64"
    perf = os.path.join(a.build, "app/rnic-perf/rnic-perf")
    baseline = os.path.join(a.build, "app/rnic-baseline/rnic-baseline")
    out = open(a.out, "w") if a.out else None

    def ns(kind, q):
        return "-" if kind is None or kind.get(q) is None else f"{kind[q]:.0f}"
    dur = ["-D", str(a.seconds)]

    def emit(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if out:
            out.write(line + "\n")

    # What is measured: (name, rnic-perf arguments, the figure taken, its unit). A case taking several
    # figures of one run names them name_field. Every send is signaled (-Q 1, perftest's default moderates
    # small messages): the figures of doc/performance.md are measured so.
    dur += ["-Q", "1"]
    cases = [
        ("write_64B_msg_rate", ["-o", "write", "-s", "64", "-t", "512"] + dur, "msg_rate_Mpps", "Mpps"),
        ("write_64KB_goodput", ["-o", "write", "-s", "65536", "-m", "4096", "-t", "16", "--verify"] + dur, "bw_avg_Gbps", "Gb/s"),
        ("read_64KB_goodput", ["-o", "read", "-s", "65536", "-m", "4096", "-t", "16"] + dur, "bw_avg_Gbps", "Gb/s"),
        ("send_64KB_goodput", ["-o", "send", "-s", "65536", "-m", "4096", "-t", "16"] + dur, "bw_avg_Gbps", "Gb/s"),
        ("read_64B_msg_rate", ["-o", "read", "-s", "64", "-t", "512"] + dur, "msg_rate_Mpps", "Mpps"),
        ("send_64B_msg_rate", ["-o", "send", "-s", "64", "-t", "512"] + dur, "msg_rate_Mpps", "Mpps"),
        ("write_64B_lat", ["-o", "write", "--lat", "-s", "64"] + dur, ("p50", "p99"), "us"),
        ("write_64B_lat_p50_no_stamps", ["-o", "write", "--lat", "-s", "64", "--no-latency"] + dur, "p50", "us"),
        ("write_64B_msg_rate_no_stamps", ["-o", "write", "-s", "64", "-t", "512", "--no-latency"] + dur,
         "msg_rate_Mpps", "Mpps"),
    ]
    for q in [int(x) for x in a.qp_scaling.split(",")]:
        # 512 messages in flight on one QP; 16 per QP on many, enough to keep every QP scheduled
        depth = 512 if q == 1 else 16
        cases.append((f"write_64B_msg_rate_{q}qp", ["-o", "write", "-s", "64", "-q", str(q), "-t", str(depth),
                                                    "--max-qp", str(max(q, 4096)), "--max-cqe", str(1 << 22)] + dur,
                      "msg_rate_Mpps", "Mpps"))
    sizes = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]
    for s in sizes:
        cases.append((f"write_bw_{s}B", ["-o", "write", "-s", str(s), "-m", "4096"] + dur, "bw_avg_Gbps", "Gb/s"))

    base = {}
    for r in range(a.runs):
        for b in run_json([baseline, "--seconds", str(a.seconds), "--"] + EAL):
            b["run"] = r
            emit(b)
            key = b["bench"] + (f"_{b['frame_bytes']}B" if "frame_bytes" in b else "")
            base.setdefault(key, []).append(b)
    results = {}
    # Runs interleaved (every case once, then again), so that a slow spell of the shared machine spreads
    # over the cases instead of landing on one of them
    for r in range(a.runs):
        for name, args, fields, unit in cases:
            for d in run_json([perf] + args + ["--json", "--"] + EAL):
                d["case"], d["run"] = name, r
                emit(d)
                for field in (fields,) if isinstance(fields, str) else fields:
                    figure = name if isinstance(fields, str) else f"{name}_{field}"
                    res = results.setdefault(figure, {"unit": unit, "values": []})
                    res["values"].append(d["lat_us"][field] if "lat_us" in d else d[field])
                    res["last"] = d

    med = {k: statistics.median(v["values"]) for k, v in results.items()}
    b_fwd64 = statistics.median(x["mpps"] for x in base["baseline_forward_138B"])
    b_fwd4k = statistics.median(x["gbps"] for x in base["baseline_forward_4170B"])
    b_copy = statistics.median(x["gbps"] for x in base["memcpy"])
    ratios = {
        "write_64B_msg_rate": ("baseline forward 138 B frames, Mpps", b_fwd64),
        "read_64B_msg_rate": ("baseline forward 138 B frames, Mpps", b_fwd64),
        "send_64B_msg_rate": ("baseline forward 138 B frames, Mpps", b_fwd64),
        "write_64KB_goodput": ("memcpy one core, Gb/s", b_copy),
        "read_64KB_goodput": ("memcpy one core, Gb/s", b_copy),
        "send_64KB_goodput": ("memcpy one core, Gb/s", b_copy),
    }
    for name, (what, value) in ratios.items():
        if name in med:
            emit({"summary": name, "value": med[name], "unit": results[name]["unit"], "baseline": what,
                  "baseline_value": value, "ratio": med[name] / value if value else None})
    for name in med:
        if name not in ratios:
            emit({"summary": name, "value": med[name], "unit": results[name]["unit"]})
    # The targets of doc/performance.md: (figure, the figure it is a ratio of or None, ">=" or "<=", bound);
    # latencies are in microseconds
    targets = [
        ("write_64B_msg_rate", None, ">=", 4.0), ("write_64KB_goodput", None, ">=", 40.0),
        ("read_64B_msg_rate", "write_64B_msg_rate", ">=", 0.75),
        ("send_64B_msg_rate", "write_64B_msg_rate", ">=", 0.75),
        ("read_64KB_goodput", "write_64KB_goodput", ">=", 0.75),
        ("send_64KB_goodput", "write_64KB_goodput", ">=", 0.75),
        ("write_64B_msg_rate_65536qp", "write_64B_msg_rate_1qp", ">=", 0.8),
        ("write_64B_lat_p50", None, "<=", 3.0), ("write_64B_lat_p99", None, "<=", 10.0),
    ]
    checks = []
    for name, against, op, bound in targets:
        if name in med and (against is None or against in med):
            value = med[name] / med[against] if against else med[name]
            met = value >= bound if op == ">=" else value <= bound
            checks.append((name, against, value, f"{op} {bound}", met))
            emit({"target": name, "against": against, "value": value,
                  ("least" if op == ">=" else "most"): bound, "met": met})
    print()
    print(f"baseline: forward 138 B {b_fwd64:.2f} Mpps, forward 4170 B {b_fwd4k:.1f} Gb/s, memcpy {b_copy:.1f} Gb/s"
          f" (medians of {a.runs})")
    print(f"{'figure':34} {'median':>10} {'unit':6} {'ratio to baseline':>18}")
    for name in med:
        ratio = f"{med[name] / ratios[name][1]:.3f}" if name in ratios and ratios[name][1] else ""
        print(f"{name:34} {med[name]:10.3f} {results[name]['unit']:6} {ratio:>18}")
    print(f"\n{'target':34} {'compared with':28} {'value':>8} {'needs':>8}  met")
    for name, against, value, need, met in checks:
        print(f"{name:34} {against or '':28} {value:8.3f} {need:>8}  {'yes' if met else 'NO'}")
    stages = results["write_64B_lat_p50"]["last"]["stages_ns"]
    print("\nper-stage latency, 64 B WRITE ping-pong (last run), ns: stage queued p50/p99 busy p50/p99")
    for s in stages:    # rnic-perf --json: null where the stage measured nothing (doc/perftest.md)
        print(f"  {s['stage']:10} " + " ".join(f"{ns(s[k], q):>9}" for k in ("queued", "busy") for q in ("p50", "p99")))
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
