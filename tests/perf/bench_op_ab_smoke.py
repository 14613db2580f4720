"""scripts/bench.py --op-ab, short: READ and SEND runs alternating, each against WRITE in turns of one
rnic-perf --op-ab run, every run classed by its WRITE rate, the medians of the runs' ratios per op overall and
per mode with issue 22's 0.9 (not judged here: the shared machine), as bench_modes.judge_all gives them.
Usage: bench_op_ab_smoke.py BENCH_PY BUILD
"""
import json
import statistics
import subprocess
import sys
import tempfile


def main():
    bench, build = sys.argv[1:3]
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        p = subprocess.run([sys.executable, bench, "--build", build, "--op-ab", "--runs", "2", "--seconds", "0.6",
                            "--turn-ms", "50", "--out", out.name], capture_output=True, text=True, timeout=200)
        lines = [json.loads(x) for x in open(out.name) if x.strip()]
    print(p.stdout[-3000:], p.stderr[-3000:])
    assert p.returncode == 0, f"bench.py --op-ab: exit {p.returncode}"
    (modes,) = [x for x in lines if "modes" in x]
    runs = [x for x in lines if "case" in x]
    # the order alternates: READ first in even runs, SEND first in odd ones
    assert [(x["run"], x["b"], x["a"]) for x in runs] == [(0, "read", "write"), (0, "send", "write"),
                                                          (1, "send", "write"), (1, "read", "write")], runs
    for x in runs:
        assert x["mode"] in modes["modes"] and x["write_Mpps"] == x["a_Mpps"] > 0 and x[x["b"] + "_Mpps"] > 0, x
        assert 9 <= x["turns"] <= 12 and x["pairs"] >= 3 and x["pair_min"] <= x["ratio"] <= x["pair_max"], x
    for op in ("read", "send"):
        (total,) = [x for x in lines if x.get("summary") == f"{op}_over_write_64B" and x["mode"] == "all"]
        assert total["values"] == [x["ratio"] for x in runs if x["b"] == op], (total, runs)
        assert abs(total["value"] - statistics.median(total["values"])) < 1e-9 and total["least"] == 0.9, total
        per_mode = [x for x in lines if x.get("summary") == total["summary"] and x["mode"] != "all"]
        assert sorted(x["mode"] for x in per_mode) == sorted(modes["modes"]), per_mode
        assert sum(x.get("runs", 0) for x in per_mode) == 2, per_mode
    assert "read_over_write_64B" in p.stdout and "B / A" in p.stdout, p.stdout
    return 0


if __name__ == "__main__":
    sys.exit(main())
