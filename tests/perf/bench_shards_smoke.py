"""scripts/bench_shards.py, short: one shard against two on the loopback pair, the order alternating, each
post list size's summary the median two-shard rate over the median one-shard rate. The target is not judged
here (the shared machine, one run), but both maps must run to completion at each size, and each run's rate
must be rnic-perf's.
Usage: bench_shards_smoke.py BENCH_SHARDS_PY BUILD
"""
import json
import statistics
import subprocess
import sys
import tempfile


def main():
    script, build = sys.argv[1:3]
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        p = subprocess.run([sys.executable, script, "--build", build, "--runs", "2", "--seconds", "0.5",
                            "--qps", "16", "--post-lists", "1,8", "--out", out.name],
                           capture_output=True, text=True, timeout=200)
        print(p.stdout[-3000:], p.stderr[-2000:])
        assert p.returncode == 0, f"bench_shards.py: exit {p.returncode}"
        lines = [json.loads(x) for x in open(out.name) if x.strip()]
    for pl in (1, 8):
        runs = [x for x in lines if x.get("case") == f"write_64B_16qp_l{pl}"]
        # run 0: one then two; run 1: two then one
        assert [(x["run"], x["shards"]) for x in runs] == [(0, "one"), (0, "two"), (1, "two"), (1, "one")], runs
        assert all(x["msg_rate_Mpps"] > 0 for x in runs), runs
        (s,) = [x for x in lines if x.get("summary") == f"two_shards_over_one_l{pl}"]
        one, two = (statistics.median(x["msg_rate_Mpps"] for x in runs if x["shards"] == k) for k in ("one", "two"))
        assert abs(s["ratio"] - two / one) < 1e-9 and s["post_list"] == pl, (s, runs)
        assert s["met"] is None, s    # no verdict under 5 runs
        print(f"post list {pl}: two shards / one {s['ratio']:.2f}")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
