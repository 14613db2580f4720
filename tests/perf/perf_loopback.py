#!/usr/bin/python3
"""rnic-perf --loopback: every operation in both modes with --verify; the JSON output parses and holds
bandwidth, message rate, latency percentiles and the per-stage table; the text output is perftest's table.
    perf_loopback.py RNIC_PERF
"""
import json
import subprocess
import sys

EAL = ["--", "-l", "0,1", "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "--log-level=error"]
STAGES = {"requester", "wire", "parser", "responder", "completer"}


def run(perf, args, json_out=True):
    cmd = [perf] + args + (["--json"] if json_out else []) + EAL
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"FAIL {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def check_json(args, out):
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines, f"{args}: no output"
    for line in lines:
        d = json.loads(line)
        assert d["verified"] is True, (args, d)
        assert d["iterations"] > 0 and d["seconds"] > 0, (args, d)
        if d["mode"] == "bw":
            assert d["bw_avg_MBps"] > 0 and d["bw_peak_MBps"] >= d["bw_avg_MBps"] * 0.999, (args, d)
            assert d["msg_rate_Mpps"] > 0, (args, d)
        else:
            lat = d["lat_us"]
            assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"], (args, lat)
        stages = {s["stage"]: s for s in d["stages_ns"]}
        assert set(stages) == STAGES, (args, stages.keys())
        assert stages["requester"]["busy"]["count"] > 0, (args, stages["requester"])
        assert stages["parser"]["busy"]["p50"] > 0, (args, stages["parser"])
    return len(lines)


def main():
    perf = sys.argv[1]
    cases = []
    for op in ["write", "read", "send"]:
        for mode in ["--bw", "--lat"]:
            cases.append(["-o", op, mode, "-s", "5000", "-n", "300"])
    for op in ["fetch_add", "cmp_swap"]:
        for mode in ["--bw", "--lat"]:
            cases.append(["-o", op, mode, "-n", "300"])
    cases += [
        ["-o", "write", "-c", "UC", "-s", "3000", "-n", "300"],
        ["-o", "send", "-c", "UC", "--lat", "-s", "100", "-n", "100"],
        ["-o", "send", "-c", "UD", "-s", "1000", "-n", "300"],
        ["-o", "write", "-q", "4", "-s", "70000", "-n", "200", "-m", "1024"],
        ["-o", "write", "-s", "64", "-I", "64", "-n", "2000"],
        ["-o", "read", "-a", "-n", "4"],
    ]
    results = 0
    for args in cases:
        results += check_json(args, run(perf, args + ["--verify"]))
    # The sweep printed one line per size, 2 .. 2^23.
    assert results == len(cases) - 1 + 23, results
    # The text output: perftest's header and table, then the per-stage table.
    text = run(perf, ["-o", "write", "-s", "4096", "-n", "200", "--report_gbits"], json_out=False)
    for needle in ["#bytes", "BW average[Gb/sec]", "MsgRate[Mpps]", "per-stage latency", "responder"]:
        assert needle in text, (needle, text)
    text = run(perf, ["-o", "read", "--lat", "-s", "64", "-n", "200"], json_out=False)
    for needle in ["t_min[usec]", "99.9% percentile[usec]", "completer"]:
        assert needle in text, (needle, text)
    print(f"rnic-perf loopback: {len(cases) + 2} runs, {results} verified results")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
