#!/usr/bin/python3
"""rnic-perf in loopback: every operation in both modes with --verify (and -b, -Q, -l); the JSON output parses
and holds bandwidth, message rate, latency percentiles and the per-stage table per device; the text output is
perftest's table, then one stage table (after a whole -a sweep) with '-' for what is not measured; the latency
sweep runs through (it stopped after 2 bytes, exit 1 and nothing said); with -n per QP, each device's
requester counts its own WQEs, not both devices'; --hist-out's raw buckets hold what --json reports.
    perf_loopback.py RNIC_PERF
"""
import json
import os
import re
import subprocess
import sys
import tempfile

EAL = ["--", "-l", "0,1", "-m", "512"]
STAGES = ["requester", "wire", "parser", "responder", "completer"]


def run(perf, args, json_out=True):
    cmd = [perf] + args + (["--json"] if json_out else []) + EAL
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"FAIL {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def stages_of(d):
    """{device: {stage: entry}} of a JSON line."""
    out = {}
    for s in d["stages_ns"]:
        out.setdefault(s["device"], {})[s["stage"]] = s
    return out


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
        st = stages_of(d)
        assert sorted(st) == ["rnic0", "rnic1"], (args, st.keys())
        for dev in st.values():
            assert list(dev) == STAGES, (args, dev.keys())
            assert dev["requester"]["unit"] == "WQE" and dev["wire"]["unit"] == "frame", (args, dev)
            assert dev["parser"]["queued"]["p50"] is None, (args, dev["parser"])  # not measured: null
        assert st["rnic0"]["requester"]["busy"]["count"] > 0, (args, st["rnic0"]["requester"])
        assert st["rnic1"]["parser"]["busy"]["p50"] > 0, (args, st["rnic1"]["parser"])
    return len(lines)


def verified_cases():
    cases = []
    for op in ["write", "read", "send"]:
        for mode in ["--bw", "--lat"]:
            cases.append(["-o", op, mode, "-s", "5000", "-n", "300"])
    for op in ["fetch_add", "cmp_swap"]:
        for mode in ["--bw", "--lat"]:
            cases.append(["-o", op, mode, "-n", "300"])
    return cases + [
        ["-o", "write", "-c", "UC", "-s", "3000", "-n", "300"],
        ["-o", "send", "-c", "UC", "--lat", "-s", "100", "-n", "100"],
        ["-o", "send", "-c", "UD", "-s", "1000", "-n", "300"],
        ["-o", "write", "-q", "4", "-s", "70000", "-n", "50", "-m", "1024"],
        ["-o", "write", "-s", "64", "-I", "64", "-n", "2000"],
        ["-o", "write", "-s", "64", "-n", "2000", "-Q", "16", "-l", "16"],
        ["-o", "read", "-s", "64", "-n", "2000", "-Q", "7", "-q", "3"],
        ["-o", "fetch_add", "-n", "500", "-Q", "10", "-b"],
        ["-o", "send", "-s", "3000", "-n", "500", "-b"],
        ["-o", "read", "-a", "-n", "4"],
        ["-o", "write", "--lat", "-a", "-n", "5"],
        ["-o", "send", "--lat", "-a", "-n", "5"],
    ]


def check_text(perf):
    text = run(perf, ["-o", "write", "-s", "4096", "-n", "200", "--report_gbits"], json_out=False)
    for needle in ["RDMA_Write BW Test", "#bytes", "BW average[Gb/sec]", "MsgRate[Mpps]",
                   "per-stage latency in ns", "responder"]:
        assert needle in text, (needle, text)
    assert "0.000" not in text.split("per-stage latency")[1], text  # unmeasured cells are '-'
    assert re.search(r"^ rnic1 +parser +\d+ frame +- +- +- ", text, re.M), text
    text = run(perf, ["-o", "read", "--lat", "-n", "200"], json_out=False)
    for needle in ["t_min[usec]", "t_typical[usec]", "t_stdev[usec]", "99.9% percentile[usec]", "completer"]:
        assert needle in text, (needle, text)
    assert re.search(r"^ 2 +200 ", text, re.M), text  # perftest's default latency size: 2 bytes
    # -a: the sizes' rows one after the other, the stage table once after them.
    text = run(perf, ["-o", "write", "--lat", "-a", "-n", "5"], json_out=False)
    rows = re.findall(r"^ (\d+) +5 ", text, re.M)
    assert rows == [str(1 << i) for i in range(1, 24)], rows
    assert text.count("per-stage latency") == 1 and text.index("per-stage latency") > text.index(" 8388608 "), text


def check_per_device(perf):
    # A WRITE ping-pong of n exchanges: each device's requester started n WQEs (the sum would be 2n).
    d = json.loads(run(perf, ["-o", "write", "--lat", "-s", "64", "-n", "400"]))
    st = stages_of(d)
    for dev in ("rnic0", "rnic1"):
        assert st[dev]["requester"]["busy"]["count"] == 400, (dev, st[dev]["requester"])
    # -n is per QP, as perftest's: 3 QPs x 100.
    d = json.loads(run(perf, ["-o", "write", "-s", "64", "-n", "100", "-q", "3", "-Q", "1"]))
    assert d["iterations"] == 300 and stages_of(d)["rnic0"]["requester"]["busy"]["count"] == 300, d


def check_hist(perf):
    """--hist-out: the raw buckets of every size, device and stage; their counts add up, the buckets tile the
    time axis, and the --json percentiles are read from them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "h.json")
        d = json.loads(run(perf, ["-o", "write", "-s", "4096", "-n", "300", "--hist-out", path]))
        h = json.load(open(path))
        bounds = h["bucket_ns"]
        assert h["unit"] == "ns" and len(bounds) == 256 and bounds[0][0] == 0, h.keys()
        assert all(lo < hi for lo, hi in bounds) and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        assert [r["size"] for r in h["results"]] == [4096], h["results"]
        raw = {(s["device"], s["stage"]): s for s in h["results"][0]["stages"]}
        assert sorted(raw) == sorted((dev, st) for dev in ("rnic0", "rnic1") for st in STAGES), sorted(raw)
        for (dev, stage), s in raw.items():
            for kind in ("queued", "busy"):
                hist, summary = s[kind], stages_of(d)[dev][stage][kind]
                assert sum(c for _, c in hist["buckets"]) == hist["count"] == summary["count"], (dev, stage, kind)
                if hist["count"] == 0:
                    continue
                rank, seen = max(int(0.5 * hist["count"] + 0.5), 1), 0
                for b, c in hist["buckets"]:
                    seen += c
                    if seen >= rank:
                        break
                lo, hi = bounds[b]
                assert lo - 0.05 <= summary["p50"] <= hi + 0.05, (dev, stage, kind, summary, bounds[b])
        assert raw[("rnic0", "requester")]["busy"]["count"] == 300
        run(perf, ["-o", "write", "--lat", "-a", "-n", "3", "--hist-out", path])
        assert [r["size"] for r in json.load(open(path))["results"]] == [1 << i for i in range(1, 24)]


def main():
    perf = sys.argv[1]
    cases = verified_cases()
    results = 0
    for args in cases:
        results += check_json(args, run(perf, args + ["--verify"]))
    # The sweeps printed one line per size, 2 .. 2^23.
    assert results == len(cases) - 3 + 3 * 23, results
    check_text(perf)
    check_per_device(perf)
    check_hist(perf)
    print(f"rnic-perf loopback: {len(cases) + 7} runs, {results} verified results")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
