#!/usr/bin/python3
"""Plot per-stage latency from rnic-perf's --hist-out file: for each device, each stage's queued and busy time
as a distribution (the share of WQEs or frames at most x ns), from the raw log-linear buckets.

    scripts/plot_stages.py STAGES.json OUT.png [--size BYTES]

Without --size the sizes of the file are added up (a -a sweep); with it, that size only.
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def cdf(hist, bounds):
    """(x, y): for each non-empty bucket its upper bound in ns and the share of samples at most there."""
    total = sum(c for _, c in hist)
    xs, ys, seen = [], [], 0
    for b, c in sorted(hist):
        seen += c
        xs.append(bounds[b][1])
        ys.append(seen / total)
    return xs, ys


def collect(doc, size):
    """{(device, stage): {"unit": ..., "queued": {bucket: n}, "busy": {bucket: n}}} over the chosen sizes."""
    out = {}
    for result in doc["results"]:
        if size is not None and result["size"] != size:
            continue
        for s in result["stages"]:
            e = out.setdefault((s["device"], s["stage"]), {"unit": s["unit"], "queued": {}, "busy": {}})
            for kind in ("queued", "busy"):
                for b, c in s[kind]["buckets"]:
                    e[kind][b] = e[kind].get(b, 0) + c
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hist")
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=None)
    a = ap.parse_args()
    doc = json.load(open(a.hist))
    bounds = doc["bucket_ns"]
    stages = collect(doc, a.size)
    if not stages:
        raise SystemExit(f"{a.hist}: no result" + (f" of size {a.size}" if a.size else ""))
    devices = sorted({d for d, _ in stages})
    fig, axes = plt.subplots(len(devices), 2, figsize=(12, 4 * len(devices)), squeeze=False)
    for row, dev in enumerate(devices):
        for col, kind in enumerate(("queued", "busy")):
            ax = axes[row][col]
            for (d, stage), e in stages.items():
                if d == dev and e[kind]:
                    xs, ys = cdf(list(e[kind].items()), bounds)
                    ax.step(xs, ys, where="post", label=f"{stage} ({sum(e[kind].values())} {e['unit']}s)")
            ax.set_xscale("log")
            ax.set_xlabel("ns")
            ax.set_ylabel("share at most x")
            ax.set_title(f"{dev}: {kind}")
            ax.grid(True, which="both", alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
    what = f"{a.size} bytes" if a.size else "every size"
    fig.suptitle(f"rnic-perf per-stage latency, {what}")
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print(f"{a.out}: {len(stages)} stage distributions of {len(devices)} device(s)")


if __name__ == "__main__":
    main()
