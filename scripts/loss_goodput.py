#!/usr/bin/env python3
"""Goodput under loss against lossless, and frames resent per frame lost, for 64 KB RC WRITE, READ and SEND
and 8-byte FETCH_ADD (the figures doc/engine.md records; issue goal: >= 0.8 of the lossless goodput for 64 KB
WRITE and READ, <= 4 frames resent per frame lost).

All over the loopback pair, 4 QPs, depth 16, the engine's --fault dropping a share of the frames both ways
(or nothing), lossless and lossy runs alternating, medians compared:
- goodput: rnic-perf (-o OP -s SIZE -t 16 -q 4 --json, no --verify: the benchmark's own figure);
- frames: one fault_matrix case each (every message verified), which counts the frames both devices sent
  (requests, resends, ACKs, NAKs, READ responses), those it sent again (the engine's resent_* counters:
  data frames, READ and atomic requests, READ responses and atomic ACKs) and those the fault layer dropped.
  Resent per lost = frames sent again / frames lost (median of the lossy runs); extra frames per lost =
  (frames sent with loss - frames sent without, median) / frames lost, which counts the NAKs and ACKs a
  loss adds too.

  scripts/loss_goodput.py [--ops write,read,send,fetch_add] [--loss 0.01] [--runs 5] [--messages 500] [--build DIR]

One JSON line per operation. Run it alone on the machine (or under flock /tmp/softrnic-dpdk.lock): the
figures are timings.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

EAL = ["--no-huge", "-m", "1024", "--no-pci", "--no-shconf", "-l", "0,1", "--log-level=error"]


def op_size(op):
    """The message size of an operation's figures: 64 KB, an atomic's 8 bytes."""
    return 8 if op == "fetch_add" else 65536


def matrix_run(build, op, messages, fault, prefix):
    """One case; its JSON line (None when the case failed)."""
    cmd = [os.path.join(build, "tests/engine/fault_matrix"), "--case", f"{op}:{op_size(op)}:16", "--messages",
           str(messages), "--"] + EAL + ["--file-prefix", prefix, "--", "--fault", fault]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    for line in out.splitlines():
        if line.startswith('{"pattern"'):
            case = json.loads(line)
            return case if case["ok"] else None
    return None


def perf_run(build, op, messages, fault, prefix):
    """rnic-perf's average goodput in Gb/s, or None: a failed run, or output this script does not read (its
    --json line's bw_avg_Gbps)."""
    cmd = [os.path.join(build, "app/rnic-perf/rnic-perf"), "-o", op, "-s", str(op_size(op)), "-t", "16", "-q", "4",
           "-n", str(messages * 4), "--json"] + (["--fault", fault] if fault else []) + ["--"] + EAL + \
          ["--file-prefix", prefix]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    for line in res.stdout.splitlines():
        try:
            return float(json.loads(line)["bw_avg_Gbps"])
        except (ValueError, KeyError):
            continue
    return None


def measure(args, op):
    clean, lossy, perf_clean, perf_lossy = [], [], [], []
    prefix = f"lossgp-{os.getpid()}"
    for i in range(args.runs):
        seed = args.seed + i
        for fault, runs in (("seed=1", clean), (f"drop={args.loss},seed={seed}", lossy)):
            case = matrix_run(args.build, op, args.messages, fault, prefix)
            if case is None:
                return {"op": op, "loss": args.loss, "error": f"a run with --fault {fault} failed: "
                        f"{args.build}/tests/engine/fault_matrix --case {op}:{op_size(op)}:16 --messages "
                        f"{args.messages} -- ... -- --fault {fault} shows why"}
            runs.append(case)
        perf_clean.append(perf_run(args.build, op, args.messages, None, prefix))
        perf_lossy.append(perf_run(args.build, op, args.messages, f"drop={args.loss},seed={seed}", prefix))
    base_frames = statistics.median(c["frames_sent"] for c in clean)
    extra = [(c["frames_sent"] - base_frames) / c["lost"] for c in lossy if c["lost"] > 0]
    resent = [c["frames_resent"] / c["lost"] for c in lossy if c["lost"] > 0]
    ok_clean = [g for g in perf_clean if g is not None]
    ok_lossy = [g for g in perf_lossy if g is not None]
    gp_clean = statistics.median(ok_clean) if ok_clean else None
    gp_lossy = statistics.median(ok_lossy) if len(ok_lossy) == args.runs else None
    return {
        "op": op, "size": op_size(op), "depth": 16, "qps": 4, "messages_per_qp": args.messages, "loss": args.loss,
        "runs": args.runs,
        "goodput_lossless_gbps": round(gp_clean, 3) if gp_clean else None,
        "goodput_lossy_gbps": round(gp_lossy, 3) if gp_lossy else None,
        "goodput_ratio": round(gp_lossy / gp_clean, 3) if gp_clean and gp_lossy else None,
        "frames_lost": statistics.median(c["lost"] for c in lossy),
        "frames_sent_lossless": base_frames, "frames_sent_lossy": statistics.median(c["frames_sent"] for c in lossy),
        "resent_per_lost": round(statistics.median(resent), 2) if resent else None,
        "extra_frames_per_lost": round(statistics.median(extra), 2) if extra else None,
        "timeouts": statistics.median(c["timeouts"] for c in lossy),
        "retransmits": statistics.median(c["retransmits"] for c in lossy),
        "verified_goodput_lossless_gbps": round(statistics.median(c["goodput_gbps"] for c in clean), 3),
        "verified_goodput_lossy_gbps": round(statistics.median(c["goodput_gbps"] for c in lossy), 3),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="write,read", help="operations, of write, read, send, fetch_add")
    ap.add_argument("--loss", type=float, default=0.01, help="share of frames dropped each way (0.01)")
    ap.add_argument("--runs", type=int, default=5, help="lossless and lossy runs each (5)")
    ap.add_argument("--messages", type=int, default=500, help="messages per QP and run (500)")
    ap.add_argument("--seed", type=int, default=1, help="the lossy runs' first fault seed (1)")
    ap.add_argument("--build", default="build", help="the build directory (build)")
    args = ap.parse_args()
    if not 0 < args.loss < 1 or args.runs < 1 or args.messages < 1:
        ap.error("--loss in (0, 1), --runs and --messages at least 1")
    failed = False
    try:
        for op in args.ops.split(","):
            result = measure(args, op)
            failed |= "error" in result or result.get("goodput_ratio") is None
            print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(f"/var/run/dpdk/lossgp-{os.getpid()}", ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
