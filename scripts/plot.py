#!/usr/bin/python3
"""Plots of a benchmark run (the JSON lines scripts/bench.py --out wrote): message rate against the number
of QPs, and WRITE bandwidth against the message size, as PNG files.
    scripts/plot.py RUN.jsonl OUTDIR
Needs python3-matplotlib (scripts/install-deps.sh installs it).
"""
import json
import os
import re
import statistics
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot.py: needs python3-matplotlib (scripts/install-deps.sh)")


def medians(rows, prefix, suffix, field):
    """[(x, median of field)] for the cases named prefix<x>suffix."""
    by_x = {}
    for r in rows:
        m = re.fullmatch(re.escape(prefix) + r"(\d+)" + re.escape(suffix), r.get("case", ""))
        if m:
            by_x.setdefault(int(m.group(1)), []).append(r[field])
    return sorted((x, statistics.median(v)) for x, v in by_x.items())


def plot(points, xlabel, ylabel, title, path):
    if not points:
        return
    xs, ys = zip(*points)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(xs, ys, marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot.py: {path}")


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    plot(medians(rows, "write_64B_msg_rate_", "qp", "msg_rate_Mpps"), "active QPs (round-robin)",
         "message rate [Mpps]", "64 B RC WRITE message rate vs QPs (loopback, 2 lcores)",
         os.path.join(out, "perf-qp-scaling.png"))
    plot(medians(rows, "write_bw_", "B", "bw_avg_Gbps"), "message size [bytes]", "goodput [Gb/s]",
         "RC WRITE bandwidth vs message size (4 KB MTU, loopback)", os.path.join(out, "perf-bw-vs-size.png"))


if __name__ == "__main__":
    main()
