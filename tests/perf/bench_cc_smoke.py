"""scripts/bench_cc.py, short: the A/B runs (DCQCN on and off in turns within each run, rnic-perf --cc-ab, the
figure the median of the runs' on / off) and the rate
limit runs (the wire rate from the goodput, each against an unlimited run), as JSON lines. The targets are not judged here (the shared machine), but a paced QP's wire
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
    lines = run(script, build, ["ab", "--runs", "2", "--seconds", "1", "--turn-ms", "100", "--qps", "1,256"])
    for q in (1, 256):
        runs = [x for x in lines if x.get("case") == f"write_64B_{q}qp"]
        assert [x["run"] for x in runs] == [0, 1], runs
        for x in runs:
            # ten turns of 100 ms in the run's second: the first left out, each on turn between two off ones
            assert 8 <= x["turns"] <= 11 and x["pairs"] == (x["turns"] - 2) // 2, x
            assert x["msg_rate_Mpps"] > 0 and x["on_Mpps"] > 0 and x["off_Mpps"] > 0, x
            assert x["pair_min"] <= x["on_over_off"] <= x["pair_max"], x
        (summary,) = [x for x in lines if x.get("summary") == f"cc_on_off_write_64B_{q}qp"]
        assert summary["ratios"] == [x["on_over_off"] for x in runs], (summary, runs)
        assert abs(summary["on_over_off"] - statistics.median(summary["ratios"])) < 1e-9, summary
        assert summary["met"] is None, summary    # no verdict under 3 runs
        print(f"{q} QPs: on / off {summary['ratios']}")
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
