"""scripts/bench.py --op-ab or --qp-ab, short: runs of rnic-perf with two settings in turns, every run classed by
its A turns' rate, the medians of the runs' ratios (B over A) per figure overall and per mode with issue 22's 0.9
(not judged here: the shared machine), as bench_modes.judge_all gives them.
    --op-ab: READ and SEND runs alternating, each against WRITE.
    --qp-ab: every QP (-t 16 each) against the first QP alone (512 in flight); 64 QPs here, not 65 536: the
    mechanism, not the figure.
Usage: bench_turns_smoke.py op-ab|qp-ab BENCH_PY BUILD
"""
import json
import statistics
import subprocess
import sys
import tempfile

# per kind: bench.py's arguments, and each run's cases as (case, B, A) in the order they run
KINDS = {
    "op-ab": (["--op-ab"], lambda r: [(f"{op}_over_write_64B", op, "write")
                                       for op in (("read", "send") if r % 2 == 0 else ("send", "read"))]),
    "qp-ab": (["--qp-ab", "--qp-ab-qps", "64"], lambda r: [("64qp_over_1qp_64B", "64qp", "1qp")]),
}


def main():
    kind, bench, build = sys.argv[1:4]
    args, cases_of = KINDS[kind]
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        p = subprocess.run([sys.executable, bench, "--build", build, "--runs", "2", "--seconds", "0.6", "--turn-ms",
                            "50", "--out", out.name] + args, capture_output=True, text=True, timeout=200)
        lines = [json.loads(x) for x in open(out.name) if x.strip()]
    print(p.stdout[-3000:], p.stderr[-3000:])
    assert p.returncode == 0, f"bench.py {kind}: exit {p.returncode}"
    (modes,) = [x for x in lines if "modes" in x]
    assert modes["by"] == "a_Mpps", modes
    runs = [x for x in lines if "case" in x]
    assert [(x["run"], x["case"], x["b"], x["a"]) for x in runs] == [(r,) + c for r in range(2) for c in cases_of(r)]
    for x in runs:
        assert x["mode"] in modes["modes"] and x[x["a"] + "_Mpps"] == x["a_Mpps"] > 0 and x[x["b"] + "_Mpps"] > 0, x
        assert 9 <= x["turns"] <= 12 and x["pairs"] >= 3 and x["pair_min"] <= x["ratio"] <= x["pair_max"], x
    for case in dict.fromkeys(x["case"] for x in runs):
        (total,) = [x for x in lines if x.get("summary") == case and x["mode"] == "all"]
        assert total["values"] == [x["ratio"] for x in runs if x["case"] == case] and total["runs"] == 2, total
        assert abs(total["value"] - statistics.median(total["values"])) < 1e-9 and total["least"] == 0.9, total
        assert total["issue"] == 22 and total["met"] == (total["value"] >= 0.9), total
        per_mode = [x for x in lines if x.get("summary") == case and x["mode"] != "all"]
        assert sorted(x["mode"] for x in per_mode) == sorted(modes["modes"]), per_mode
        assert sum(x.get("runs", 0) for x in per_mode) == 2, per_mode
        assert case in p.stdout, p.stdout
    assert "B / A" in p.stdout, p.stdout
    return 0


if __name__ == "__main__":
    sys.exit(main())
