#!/usr/bin/python3
"""The benchmark runner: in one run, the raw baseline (rnic-baseline: the loopback ports forwarding mbufs
with no RDMA processing, and one core's memcpy bandwidth) and softrnic's figures (rnic-perf --loopback),
each the median of --runs runs, printed as JSON lines and as a table with the ratios to the baseline.

    scripts/bench.py [--build DIR] [--runs N] [--seconds S] [--quick] [--split MPPS] [--out FILE.jsonl]
    scripts/bench.py --port af_xdp,af_packet,memif [--build DIR] [--runs N] [--seconds S] [--out FILE.jsonl]
    scripts/bench.py --op-ab [--build DIR] [--runs N] [--seconds S] [--turn-ms MS] [--split MPPS] [--out FILE.jsonl]
    scripts/bench.py --qp-ab [--qp-ab-qps Q] [--build DIR] [--runs N] [--seconds S] [--turn-ms MS] [--split MPPS] ...

The machine's modes (scripts/bench_modes.py): right before each case run a short probe (rnic-baseline
--probe, --probe-seconds each for forwarding and memcpy) classes the run fast or slow; every figure's ratio
is taken against the probes of its own mode and every target is judged per mode ("not seen" for a mode
that never came); a figure whose runs spread more than 1.3x is flagged with each run's probe. --split MPPS
sets the forwarding rate that divides the modes (otherwise found from the probes' distribution).

--port: the real port paths instead (scripts/bench_ports.py): rnic-perf server and client in two
processes over each port kind named, against the raw rate of the same ports in the same run.

--op-ab: issue 22's 64 B READ and SEND against WRITE message rates as ratios within one process (the modes
go with the process, so ratios of separate runs mix them): each run is rnic-perf's --op-ab, WRITE and the
other op in turns of --turn-ms ms, each turn of the other op against the mean of the WRITE turns either side,
the run's figure their median; READ and SEND runs alternate, --runs of each. Each run's mode is told by its
WRITE turns' median rate (the two-means split above, over these runs, or --split); the figure is the median
of the runs' ratios, overall and per mode, judged against issue 22's 0.9 (bench_modes.judge_all).

--qp-ab: issue 22's 65 536 QPs against 1 QP the same way: each run is rnic-perf's --qp-ab, every one of
--qp-ab-qps QPs with 16 messages in flight (the scaling case's -t 16) and the first QP alone with 512 (the
1-QP case's -t 512) in turns of --turn-ms ms (default 3000: a 1-QP turn begins with the other turn's
million messages completing), each run's mode by its 1-QP turns' rate. Give it --seconds of 20 or more.

--quick: one run of each, one second each (a smoke test of the runner). The JSON lines (every run, then one
"summary" line per figure) also go to --out, for scripts/plot.py.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import bench_modes
import bench_ports

# 64K QPs with 16 messages in flight each need about 2.5 GB of engine memory
EAL = ["-l", "0,1", "--no-huge", "-m", "6144", "--no-pci", "--no-shconf", "--log-level=error"]
# The probe needs no more than its mbuf pool
PROBE_EAL = ["-l", "0,1", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--log-level=error"]


def json_lines(out):
    """emit(obj): obj as one JSON line on stdout, and in the file out when there is one (the runners' --out)."""
    def emit(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
    return emit


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
    ap.add_argument("--probe-seconds", type=float, default=0.25,
                    help="each half of the probe before every case run (forwarding, memcpy)")
    ap.add_argument("--split", type=float, default=None,
                    help="forwarding Mpps dividing the modes (default: found from the probes)")
    ap.add_argument("--port", default=None, help="real port paths: af_xdp, af_packet, memif, comma-separated")
    ap.add_argument("--op-ab", action="store_true", help="READ and SEND against WRITE in turns within each run")
    ap.add_argument("--qp-ab", action="store_true", help="many QPs against 1 QP in turns within each run")
    ap.add_argument("--qp-ab-qps", type=int, default=65536, help="--qp-ab: the many QPs")
    ap.add_argument("--turn-ms", type=int, default=None,
                    help="--op-ab, --qp-ab: each setting for this long at a time (default 50, --qp-ab 3000)")
    a = ap.parse_args()
    if a.turn_ms is None:
        a.turn_ms = 3000 if a.qp_ab else 50
    if a.quick:
        a.runs, a.seconds, a.qp_scaling, a.probe_seconds = 1, 1, "1,64", 0.1
    perf = os.path.join(a.build, "app/rnic-perf/rnic-perf")
    baseline = os.path.join(a.build, "app/rnic-baseline/rnic-baseline")
    out = open(a.out, "w") if a.out else None

    def ns(kind, q):
        return "-" if kind is None or kind.get(q) is None else f"{kind[q]:.0f}"
    dur = ["-D", str(a.seconds)]
    emit = json_lines(out)

    if a.port:
        return ports_main(a, emit, out)
    if a.op_ab or a.qp_ab:
        return turns_main(a, perf, emit, out)

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
    # Each case run is paired with the probe taken right before it: its mode, and its baselines
    for r in range(a.runs):
        for name, args, fields, unit in cases:
            probe = {b["bench"]: b for b in run_json([baseline, "--probe", "--seconds", str(a.probe_seconds), "--"]
                                                     + PROBE_EAL)}
            pr = {"probe": name, "run": r, "mpps": probe["baseline_forward"]["mpps"],
                  "copy_gbps": probe["memcpy"]["gbps"]}
            emit(pr)
            for d in run_json([perf] + args + ["--json", "--"] + EAL):
                d["case"], d["run"], d["probe_mpps"] = name, r, pr["mpps"]
                emit(d)
                for field in (fields,) if isinstance(fields, str) else fields:
                    figure = name if isinstance(fields, str) else f"{name}_{field}"
                    res = results.setdefault(figure, {"unit": unit, "values": [], "runs": []})
                    res["values"].append(d["lat_us"][field] if "lat_us" in d else d[field])
                    res["runs"].append({"value": res["values"][-1], "probe": pr["mpps"], "copy": pr["copy_gbps"]})
                    res["last"] = d

    med = {k: statistics.median(v["values"]) for k, v in results.items()}
    b_fwd64 = statistics.median(x["mpps"] for x in base["baseline_forward_138B"])
    b_fwd4k = statistics.median(x["gbps"] for x in base["baseline_forward_4170B"])
    b_copy = statistics.median(x["gbps"] for x in base["memcpy"])
    # The figures taken as ratios of a baseline: "forward" (138 B frames, Mpps) or "copy" (memcpy, Gb/s)
    ratios = {"write_64B_msg_rate": "forward", "read_64B_msg_rate": "forward", "send_64B_msg_rate": "forward",
              "write_64KB_goodput": "copy", "read_64KB_goodput": "copy", "send_64KB_goodput": "copy"}
    overall = {"forward": ("baseline forward 138 B frames, Mpps", b_fwd64), "copy": ("memcpy one core, Gb/s", b_copy)}
    sp = bench_modes.split([r["probe"] for res in results.values() for r in res["runs"]], a.split)
    emit(dict({"modes": bench_modes.modes_seen(sp)}, **sp))
    for name, kind in ratios.items():
        if name in med:
            what, value = overall[kind]
            emit({"summary": name, "value": med[name], "unit": results[name]["unit"], "baseline": what,
                  "baseline_value": value, "ratio": med[name] / value if value else None})
    for name in med:
        if name not in ratios:
            emit({"summary": name, "value": med[name], "unit": results[name]["unit"]})
    pm = {name: bench_modes.per_mode(res["runs"], sp) for name, res in results.items()}
    for name, modes in pm.items():
        for m, x in modes.items():
            line = {"summary": name, "mode": m, "unit": results[name]["unit"], "seen": x is not None}
            if x is not None:
                line.update(value=x["value"], runs=x["runs"], probe_mpps=x["forward"], probe_copy_gbps=x["copy"])
                if name in ratios:
                    line["ratio"] = x["value"] / x[ratios[name]]
            emit(line)
    # The targets (doc/performance.md), each judged per mode: (figure, against, op, bound, issue); against a
    # figure, "forward" or "copy" (the same mode's probe), or None; latencies in microseconds
    targets = [
        ("write_64B_msg_rate", None, ">=", 4.0, 7), ("write_64KB_goodput", None, ">=", 40.0, 7),
        ("read_64B_msg_rate", "write_64B_msg_rate", ">=", 0.75, 7),
        ("send_64B_msg_rate", "write_64B_msg_rate", ">=", 0.75, 7),
        ("read_64KB_goodput", "write_64KB_goodput", ">=", 0.75, 7),
        ("send_64KB_goodput", "write_64KB_goodput", ">=", 0.75, 7),
        ("write_64B_msg_rate_65536qp", "write_64B_msg_rate_1qp", ">=", 0.8, 7),
        ("write_64B_lat_p50", None, "<=", 3.0, 7), ("write_64B_lat_p99", None, "<=", 10.0, 7),
        ("write_64B_msg_rate", "forward", ">=", 0.2, 22),
        ("read_64B_msg_rate", "write_64B_msg_rate", ">=", 0.9, 22),
        ("send_64B_msg_rate", "write_64B_msg_rate", ">=", 0.9, 22),
        ("write_64B_msg_rate_65536qp", "write_64B_msg_rate_1qp", ">=", 0.9, 22),
        ("write_64KB_goodput", "copy", ">=", 0.4, 22),
    ]
    checks = bench_modes.judge(targets, {k: v["runs"] for k, v in results.items()}, sp)
    for c in checks:
        emit(c)
    flags = [f for f in (bench_modes.spread_flag(k, v["runs"], sp) for k, v in results.items()) if f]
    for f in flags:
        emit(f)
    if "write_64KB_goodput" in results:
        emit({"check": "write_64KB_goodput every run within 1.3x of the median",
              "met": bench_modes.within_of_median(results["write_64KB_goodput"]["runs"])})
    print()
    print(f"baseline: forward 138 B {b_fwd64:.2f} Mpps, forward 4170 B {b_fwd4k:.1f} Gb/s, memcpy {b_copy:.1f} Gb/s"
          f" (medians of {a.runs})")
    thr = f"at {sp['threshold']:.2f} Mpps" if sp["threshold"] else "none"
    print(f"modes: split {thr}: {sp['how']}")
    modes = bench_modes.modes_seen(sp)
    print(f"{'figure':34} {'median':>10} {'unit':6} {'ratio':>7}" + "".join(f" {m + ' median':>12} {'ratio':>7}"
                                                                        for m in modes))
    for name in med:
        ratio = f"{med[name] / overall[ratios[name]][1]:.3f}" if name in ratios and overall[ratios[name]][1] else ""
        row = f"{name:34} {med[name]:10.3f} {results[name]['unit']:6} {ratio:>7}"
        for m in modes:
            x = pm[name][m]
            mode_ratio = f"{x['value'] / x[ratios[name]]:.3f}" if x is not None and name in ratios else ""
            row += f" {'not seen':>12} {'':>7}" if x is None else f" {x['value']:12.3f} {mode_ratio:>7}"
        print(row)
    print(f"\n{'target':34} {'compared with':28} {'mode':5} {'value':>8} {'needs':>8}  met (issue)")
    for c in checks:
        need = f"{'>=' if 'least' in c else '<='} {c.get('least', c.get('most'))}"
        value = f"{c['value']:8.3f}" if c["seen"] else f"{'not seen':>8}"
        met = ("yes" if c["met"] else "NO") if c["seen"] else "-"
        print(f"{c['target']:34} {c['against'] or '':28} {c['mode']:5} {value} {need:>8}  {met} ({c['issue']})")
    for f in flags:
        within = ", ".join(f"{m} {s:.2f}x" for m, s in f["within"].items() if s is not None)
        print(f"\nSPREAD {f['flag']}: {f['spread']:.2f}x over all runs ({within or 'one run a mode'}): {f['cause']}")
        print("  runs (value, probe Mpps, mode): " + ", ".join(
            f"{r['value']:.3g} ({r['probe_mpps']:.1f} {r['mode']})" for r in f["runs"]))
    stages = results["write_64B_lat_p50"]["last"]["stages_ns"]
    print("\nper-stage latency, 64 B WRITE ping-pong (last run), ns: stage queued p50/p99 busy p50/p99")
    for s in stages:    # rnic-perf --json: null where the stage measured nothing (doc/perftest.md)
        print(f"  {s['stage']:10} " + " ".join(f"{ns(s[k], q):>9}" for k in ("queued", "busy") for q in ("p50", "p99")))
    if out:
        out.close()
    return 0


def turns_cases(a, perf, r):
    """Run r's cases of --op-ab or --qp-ab: (case, the rnic-perf command, its JSON object's name)."""
    dur = ["-s", "64", "-Q", "1", "-D", str(a.seconds), "--json"]
    if a.qp_ab:
        q = a.qp_ab_qps
        # bench's 1-QP case (-t 512) against its many-QP case (-t 16 each), the two in one process
        return [(f"{q}qp_over_1qp_64B", [perf, "-o", "write", "-q", str(q), "-t", "16", "--max-qp", str(max(q, 4096)),
                                         "--max-cqe", str(1 << 22), "--qp-ab", f"1:512:{a.turn_ms}"] + dur, "qp_ab")]
    ops = ("read", "send") if r % 2 == 0 else ("send", "read")
    return [(f"{op}_over_write_64B", [perf, "-o", "write", "-t", "512", "--op-ab", f"{op}:{a.turn_ms}"] + dur, "op_ab")
            for op in ops]


def turns_main(a, perf, emit, out):
    """--op-ab and --qp-ab: the runs (for --op-ab READ and SEND alternating), each a ratio of B turns over the A
    turns either side within one rnic-perf run, each run's mode by its A turns' rate, the medians of the runs'
    ratios overall and per mode (bench_modes.judge_all) against issue 22's 0.9, then a table."""
    runs = []
    for r in range(a.runs):
        for case, cmd, key in turns_cases(a, perf, r):
            (d,) = run_json(cmd + ["--"] + EAL)[-1:]
            t = d[key]
            names = (t["b"], t["a"]) if key == "op_ab" else (f"{t['b_qps']}qp", f"{t['a_qps']}qp")
            runs.append({"case": case, "b": names[0], "a": names[1], "run": r, "ratio": t["ratio"],
                         "pair_min": t["ratio_min"], "pair_max": t["ratio_max"], "pairs": t["pairs"],
                         "turns": t["turns"], f"{names[1]}_Mpps": t["a_Mpps"], f"{names[0]}_Mpps": t["b_Mpps"],
                         "a_Mpps": t["a_Mpps"], "measured": t["measured"], "msg_rate_Mpps": d["msg_rate_Mpps"]})
    sp = bench_modes.split([x["a_Mpps"] for x in runs], a.split)
    emit(dict({"modes": bench_modes.modes_seen(sp), "by": "a_Mpps"}, **sp))
    for x in runs:
        x["mode"] = bench_modes.mode_of(x["a_Mpps"], sp)
        emit(x)
    cases = list(dict.fromkeys(x["case"] for x in runs))
    figures = {c: [{"value": x["ratio"], "probe": x["a_Mpps"]} for x in runs if x["case"] == c and x["pairs"] > 0]
               for c in cases}
    checks = bench_modes.judge_all([(c, None, ">=", 0.9, 22) for c in cases], figures, sp)
    for c in checks:
        emit(dict(c, summary=c["target"]))
    print(f"\nmodes by the A turns' rate: {sp['how']}"
          + (f", split at {sp['threshold']:.2f} Mpps" if sp["threshold"] else ""))
    print(f"{'run':>3} {'B':8} {'A':6} {'A Mpps':>8} {'mode':5} {'B Mpps':>8} {'B / A':>7} {'pairs':>6}  range")
    for x in runs:
        print(f"{x['run']:3} {x['b']:8} {x['a']:6} {x['a_Mpps']:8.3f} {x['mode']:5} {x[x['b'] + '_Mpps']:8.3f} "
              f"{x['ratio']:7.3f} {x['pairs']:6}  {x['pair_min']:.3f} .. {x['pair_max']:.3f}")
    print(f"\n{'figure':22} {'mode':5} {'runs':>4} {'median':>7} {'needs':>6}  met (issue)")
    for c in checks:
        value = f"{c['value']:7.3f}" if c["seen"] else f"{'-':>7}"
        met = ("yes" if c["met"] else "NO") if c["seen"] else "-"
        print(f"{c['target']:22} {c['mode']:5} {c.get('runs', 0):4} {value} {'>= 0.9':>6}  {met} ({c['issue']})")
    if out:
        out.close()
    return 0


def ports_main(a, emit, out):
    """--port: each kind's runs and summary lines, then a table of the ratios."""
    kinds = a.port.split(",")
    bad = [k for k in kinds if k not in bench_ports.KINDS]
    if bad:
        raise SystemExit(f"bench: --port {','.join(bad)}: not one of {', '.join(bench_ports.KINDS)}")
    table, skipped = [], {}
    for k in kinds:
        lines = bench_ports.run_kind(a.build, k, a.runs, a.seconds, emit)
        table += lines
        if not lines:
            skipped[k] = True
    print(f"\n{'port':10} {'figure':26} {'median':>9} {'unit':5} {'raw':>9} {'ratio':>6}  (medians of {a.runs})")
    for x in table:
        print(f"{x['port_kind']:10} {x['summary']:26} {x['value']:9.3f} {x['unit']:5} {x['baseline_value']:9.3f} "
              f"{x['ratio']:6.3f}")
    for k in skipped:
        print(f"{k:10} skipped (its line above says why)")
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
