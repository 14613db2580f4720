#!/usr/bin/python3
"""rnic-perf in-process and through rnicd, in one run: the same test (default RC WRITE 64 KB bandwidth,
loopback between rnic0 and rnic1) alternately in the benchmark's own engine and as a client of a daemon
started for that run only (so the two never share the cores), --runs times each; JSON lines per run, then
the medians and their ratio (doc/rnicd.md). In-process, EAL pins rnic-perf's thread to lcore 0 and the
engine's stages run on lcore 1; a client has no EAL, so it is pinned to the same core 0 with taskset (the
daemon's main lcore, which only sleeps in poll()), as a deployment keeps clients off the engine's cores.

    scripts/rnicd_bench.py [--build DIR] [--runs N] [--seconds S] [-- rnic-perf arguments]
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from bench import run_json

EAL = ["-l", "0,1", "--no-huge", "-m", "1024", "--no-pci"]


def start_daemon(rnicd, path, prefix):
    d = subprocess.Popen([rnicd, "--socket", path, "--", *EAL, "--file-prefix", prefix,
                          "--log-level=error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(path)
            return d
        except OSError:
            time.sleep(0.05)
        finally:
            s.close()
    d.kill()
    raise SystemExit("rnicd_bench: rnicd did not start")


def stop_daemon(d):
    d.send_signal(signal.SIGTERM)
    if d.wait(timeout=30) != 0:
        raise SystemExit(f"rnicd_bench: rnicd exited {d.returncode}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("perf_args", nargs="*", default=["-o", "write", "-s", "65536"])
    a = ap.parse_args()
    perf = os.path.join(a.build, "app/rnic-perf/rnic-perf")
    rnicd = os.path.join(a.build, "app/rnicd/rnicd")
    cmd = [perf, *a.perf_args, "-D", str(a.seconds), "--json"]
    figures = {"in-process": [], "rnicd": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rnicd.sock")
        for run in range(a.runs):
            for mode in ("in-process", "rnicd"):
                env = dict(os.environ)
                env.pop("RNIC_DAEMON", None)
                d = None
                if mode == "rnicd":
                    d = start_daemon(rnicd, path, f"rnicd_bench_{os.getpid()}")
                    env["RNIC_DAEMON"] = path
                pin = ["taskset", "-c", "0"] if mode == "rnicd" else []
                try:
                    res = run_json(pin + cmd + ["--", *EAL, "--no-shconf", "--log-level=error"], env=env)[0]
                finally:
                    if d is not None:
                        stop_daemon(d)
                figures[mode].append(res["bw_avg_Gbps"])
                print(json.dumps({"mode": mode, "run": run, "bw_avg_Gbps": res["bw_avg_Gbps"],
                                  "msg_rate_Mpps": res["msg_rate_Mpps"]}), flush=True)
    med = {m: statistics.median(v) for m, v in figures.items()}
    print(json.dumps({"summary": " ".join(cmd), "in_process_Gbps": med["in-process"], "rnicd_Gbps": med["rnicd"],
                      "ratio": med["rnicd"] / med["in-process"],
                      "spread": {m: [min(v), max(v)] for m, v in figures.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
