#!/usr/bin/python3
"""Two shards against one (issue 22's scale-out), rnic-perf in loopback:

    scripts/bench_shards.py [--build DIR] [--runs N] [--seconds S] [--qps 64] [--post-lists 1,32] [--out FILE.jsonl]

64 B RC WRITE over --qps QPs, the application on lcore 0 in both cases: one shard (`--stages shards=0`,
EAL `--lcores 0@0`: the application and the shard's every stage on CPU 0) against two (`shards=0+1`, `--lcores
0@0,1@1`: the application and shard 0 on CPU 0, shard 1 on CPU 1). The runs are interleaved, the order
alternating (one, two; two, one; ...), and the figure is the median two-shard rate over the median one-shard
rate, for each post list size (-l N with one signaled send in N, -Q N): the application's cost per message
(its posts and CQ polls, on CPU 0 in both cases) shrinks with N, and that cost is what keeps CPU 0 from
giving its shard as much as CPU 1 gives its own. Target: at least 1.8, with at least 5 runs of each; a
case whose runs spread more than 1.3x is flagged.

JSON lines: one per run, then one "summary" per post list size with "met"; --check: exit 1 when the
target is missed at every post list size.
"""
import argparse
import os
import statistics
import sys

from bench import json_lines, run_json

EAL = ["--no-huge", "-m", "6144", "--no-pci", "--no-shconf", "--log-level=error"]
MAPS = {"one": ("shards=0", "0@0"), "two": ("shards=0+1", "0@0,1@1")}


def perf_rate(perf, a, post_list, shards):
    stages, lcores = MAPS[shards]
    args = ["-o", "write", "-s", "64", "-q", str(a.qps), "-t", str(max(128, post_list)), "-l", str(post_list),
            "-Q", str(post_list), "-D", str(a.seconds), "--json"]
    res = run_json([perf] + args + ["--", "--lcores", lcores] + EAL + ["--", "--stages", stages],
                   timeout=a.seconds + 120)
    if not res:
        raise SystemExit(f"bench_shards: rnic-perf {' '.join(args)} printed no result")
    return res[-1]["msg_rate_Mpps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--qps", type=int, default=64)
    ap.add_argument("--post-lists", default="1,32", help="post list sizes (-l, -Q), comma-separated")
    ap.add_argument("--out", default=None)
    ap.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    a = ap.parse_args()
    perf = os.path.join(a.build, "app/rnic-perf/rnic-perf")
    out = open(a.out, "w") if a.out else None
    emit = json_lines(out)
    met_any = False
    for pl in [int(x) for x in a.post_lists.split(",")]:
        rates = {"one": [], "two": []}
        for r in range(a.runs):
            for shards in (("one", "two") if r % 2 == 0 else ("two", "one")):
                rate = perf_rate(perf, a, pl, shards)
                rates[shards].append(rate)
                emit({"case": f"write_64B_{a.qps}qp_l{pl}", "shards": shards, "run": r, "msg_rate_Mpps": rate})
        one, two = statistics.median(rates["one"]), statistics.median(rates["two"])
        spread = {k: max(v) / min(v) for k, v in rates.items()}
        met = two / one >= 1.8 if a.runs >= 5 else None
        met_any |= bool(met)
        emit({"summary": f"two_shards_over_one_l{pl}", "qps": a.qps, "post_list": pl, "runs": a.runs,
              "one_Mpps": one, "two_Mpps": two, "ratio": two / one, "spread": spread,
              "flag": [k for k, v in spread.items() if v > 1.3], "target": ">= 1.8 (5 runs or more)", "met": met})
    if out:
        out.close()
    return 1 if a.check and not met_any else 0


if __name__ == "__main__":
    sys.exit(main())
