"""scripts/bench_cc.py, short: the A/B pairs (DCQCN on and off taken back to back, the order alternating, each
run classed by the probe before it, the figure per mode the median of the pairs within it) and the rate limit runs (the wire rate from the goodput, each against
an unlimited run), as JSON lines. The targets are not judged here (the shared machine), but a paced QP's wire
rate by the clock can never be above its limit by more than 5 % and its bucket: that is checked.
Usage: bench_cc_smoke.py BENCH_CC_PY BUILD
"""
import json
import statistics
import subprocess
import sys
import tempfile


def run(script, build, args):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        p = subprocess.run([sys.executable, script, *args, "--build", build, "--out", out.name],
                           capture_output=True, text=True, timeout=240)
        print(p.stdout[-2000:], p.stderr[-2000:])
        assert p.returncode == 0, f"bench_cc.py {args[0]}: exit {p.returncode}"
        return [json.loads(x) for x in open(out.name) if x.strip()]


def main():
    script, build = sys.argv[1:3]
    lines = run(script, build, ["ab", "--runs", "2", "--seconds", "0.5", "--qps", "1,256", "--probe-seconds", "0.1"])
    for q in (1, 256):
        runs = [x for x in lines if x.get("case") == f"write_64B_{q}qp"]
        # pair 0: on then off; pair 1: off then on; each run with the probe before it
        assert [(x["run"], x["cc"]) for x in runs] == [(0, "dcqcn"), (0, "none"), (1, "none"), (1, "dcqcn")], runs
        assert all(x["msg_rate_Mpps"] > 0 and x["probe_mpps"] > 0 for x in runs), runs
        pairs = [x for x in lines if x.get("pair") == f"write_64B_{q}qp"]
        for r in (0, 1):
            on, off = (next(x["msg_rate_Mpps"] for x in runs if x["run"] == r and x["cc"] == cc) for cc in ("dcqcn", "none"))
            assert abs(pairs[r]["on_over_off"] - on / off) < 1e-9, (pairs, runs)
        # a summary per mode of the pairs within one mode: their median, no verdict under 3 pairs
        summaries = [x for x in lines if x.get("summary") == f"cc_on_off_write_64B_{q}qp"]
        kept = [p["on_over_off"] for p in pairs if p["mode"] != "mixed"]
        assert sum(x["pairs"] for x in summaries) == len(kept), (summaries, pairs)
        for x in summaries:
            mine = [p["on_over_off"] for p in pairs if p["mode"] == x["mode"]]
            assert abs(x["median_on_over_off"] - statistics.median(mine)) < 1e-9 and x["met"] is None, (x, pairs)
        print(f"{q} QPs: pairs {[(p['on_over_off'], p['mode']) for p in pairs]}")
    lines = run(script, build, ["rate", "--runs", "1", "--seconds", "1", "--rates", "0.1"])
    (r,) = [x for x in lines if x.get("case") == "rate_limit_0.1G"]
    assert r["goodput_Gbps"] > 0 and r["unlimited_wire_Gbps"] > r["wire_Gbps"], r
    # the bucket: 64 us at the rate, at least two 4 KB frames (8448 B); over the run's second
    assert r["wire_Gbps"] <= 1.05 * 0.1 + 8448 * 8 / 1e9, r
    summary = next(x for x in lines if x.get("summary") == "rate_limit_0.1G")
    assert summary["runs"] == 1 and summary["reachable_runs"] == (1 if r["reachable"] else 0), summary
    print(f"rate_limit 0.1 Gbit/s: wire {r['wire_Gbps']:.4f} Gbit/s ({r['ratio']:.3f} of it), lcore {r['worker_cpu']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
