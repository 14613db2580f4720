"""scripts/bench.py --qp-ab, short: runs of rnic-perf --qp-ab, every QP (-t 16 each) against the first QP alone
(512 in flight) in turns of one run, every run classed by its 1-QP rate, the median of the runs' ratios
overall and per mode with issue 22's 0.9 (not judged here: the shared machine), as bench_modes.judge_all
gives them. 64 QPs here, not 65 536: the mechanism, not the figure. Usage: bench_qp_ab_smoke.py BENCH_PY BUILD
"""
import json
import statistics
import subprocess
import sys
import tempfile


def main():
    bench, build = sys.argv[1:3]
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        p = subprocess.run([sys.executable, bench, "--build", build, "--qp-ab", "--qp-ab-qps", "64", "--runs", "2",
                            "--seconds", "0.6", "--turn-ms", "50", "--out", out.name], capture_output=True,
                           text=True, timeout=200)
        lines = [json.loads(x) for x in open(out.name) if x.strip()]
    print(p.stdout[-3000:], p.stderr[-3000:])
    assert p.returncode == 0, f"bench.py --qp-ab: exit {p.returncode}"
    (modes,) = [x for x in lines if "modes" in x]
    assert modes["by"] == "a_Mpps", modes
    runs = [x for x in lines if "case" in x]
    assert [(x["run"], x["case"], x["b"], x["a"]) for x in runs] == [
        (r, "64qp_over_1qp_64B", "64qp", "1qp") for r in range(2)], runs
    for x in runs:
        assert x["mode"] in modes["modes"] and x["1qp_Mpps"] == x["a_Mpps"] > 0 and x["64qp_Mpps"] > 0, x
        assert 9 <= x["turns"] <= 12 and x["pairs"] >= 3 and x["pair_min"] <= x["ratio"] <= x["pair_max"], x
    (total,) = [x for x in lines if x.get("summary") == "64qp_over_1qp_64B" and x["mode"] == "all"]
    assert total["values"] == [x["ratio"] for x in runs] and total["runs"] == 2, (total, runs)
    assert abs(total["value"] - statistics.median(total["values"])) < 1e-9 and total["least"] == 0.9, total
    assert total["issue"] == 22 and total["met"] == (total["value"] >= 0.9), total
    per_mode = [x for x in lines if x.get("summary") == total["summary"] and x["mode"] != "all"]
    assert sorted(x["mode"] for x in per_mode) == sorted(modes["modes"]), per_mode
    assert sum(x.get("runs", 0) for x in per_mode) == 2, per_mode
    assert "64qp_over_1qp_64B" in p.stdout and "B / A" in p.stdout, p.stdout
    return 0


if __name__ == "__main__":
    sys.exit(main())
