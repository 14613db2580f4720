"""scripts/bench_cc.py, short: the A/B runs (DCQCN on and off interleaved, the order alternating, classed into
the machine's modes by their own rates, the figure per mode the median on over the median off) and the rate
limit runs (the wire rate from the goodput, each against an unlimited run), as JSON lines. The targets are not judged here (the shared machine), but a paced QP's wire
rate by the clock can never be above its limit by more than 5 % and its bucket: that is checked.
Usage: bench_cc_smoke.py BENCH_CC_PY BUILD
"""
import json
import os
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
    sys.path.insert(0, os.path.dirname(script))
    import bench_modes    # pylint: disable=import-outside-toplevel
    lines = run(script, build, ["ab", "--runs", "2", "--seconds", "0.5", "--qps", "1,256"])
    for q in (1, 256):
        runs = [x for x in lines if x.get("case") == f"write_64B_{q}qp"]
        # pair 0: on then off; pair 1: off then on
        assert [(x["run"], x["cc"]) for x in runs] == [(0, "dcqcn"), (0, "none"), (1, "none"), (1, "dcqcn")], runs
        assert all(x["msg_rate_Mpps"] > 0 for x in runs), runs
        # per mode of the runs' own rates: the median with DCQCN over the median without, no verdict under 3
        sp = bench_modes.split([x["msg_rate_Mpps"] for x in runs])
        summaries = [x for x in lines if x.get("summary") == f"cc_on_off_write_64B_{q}qp"]
        assert [x["mode"] for x in summaries] == bench_modes.modes_seen(sp), (summaries, sp)
        for x in summaries:
            on, off = ([r["msg_rate_Mpps"] for r in runs if r["cc"] == cc and bench_modes.mode_of(r["msg_rate_Mpps"], sp) ==
                        x["mode"]] for cc in ("dcqcn", "none"))
            assert (x["runs_on"], x["runs_off"]) == (len(on), len(off)), (x, runs)
            if on and off:
                assert abs(x["on_over_off"] - statistics.median(on) / statistics.median(off)) < 1e-9, (x, runs)
                assert x["met"] is None, x
        print(f"{q} QPs: {[(x['mode'], x.get('on_over_off')) for x in summaries]}")
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
