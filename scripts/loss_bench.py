#!/usr/bin/python3
"""RC under loss on the loopback pair: goodput with and without `--fault drop=P` (both ports, so requests and
responses alike), and what recovery cost, from the engine's own counters read over DPDK telemetry while
rnic-perf runs:
    lost frames     frames the two devices sent and did not receive (tx_packets - rx_packets)
    resent frames   resent_kept + resent_gathered (SEND/WRITE packets), resent_requests (READ/atomic
                    requests), resent_responses (READ responses, atomic ACKs)
Goodput is rnic-perf's average over the whole run; the counters are the difference between two reads of
/rnic/stats, one second in and just before the end.

    python3 scripts/loss_bench.py [--perf build/app/rnic-perf/rnic-perf] [--loss 0.01] [--ops write,read]
                                  [--size 65536] [--qps 4] [--depth 16] [--seconds 5] [--runs 1]
                                  [-- engine args for every run, e.g. --window 131072]
"""
import argparse
import glob
import json
import os
import socket
import statistics
import subprocess
import sys
import time

RESENT = ("resent_kept", "resent_gathered", "resent_requests", "resent_responses")


def telemetry_socket(prefix, deadline):
    while time.time() < deadline:
        found = glob.glob(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2") + \
            glob.glob(f"/run/user/{os.getuid()}/dpdk/{prefix}/dpdk_telemetry.v2")
        if found:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            sock.connect(found[0])
            json.loads(sock.recv(1 << 16).decode())  # the greeting
            return sock
        time.sleep(0.05)
    raise RuntimeError("no telemetry socket")


def counters(sock):
    sock.send(b"/rnic/stats")
    stats = json.loads(sock.recv(1 << 20).decode())["/rnic/stats"]
    total = {}
    for dev in stats.values():
        for name in ("tx_packets", "rx_packets", "timeouts", "retransmits", "seq_naks_sent") + RESENT:
            total[name] = total.get(name, 0) + dev.get(name, 0)
    return total


def run(args, op, loss):
    prefix = f"rnic-loss-{os.getpid()}-{op}-{int(loss * 1e6)}"
    cmd = [args.perf, "-o", op, "-s", str(args.size), "-q", str(args.qps), "-t", str(args.depth),
           "-D", str(args.seconds), "--json"]
    if loss > 0:
        cmd += ["--fault", f"drop={loss},seed=11"]
    cmd += args.engine + ["--", "-l", "0,1", "--no-huge", "-m", "1024", "--no-pci", "--file-prefix", prefix,
                          "--log-level=error"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = last = None
    try:
        sock = telemetry_socket(prefix, time.time() + 20)
        time.sleep(1.0)
        first = counters(sock)
        time.sleep(args.seconds - 1.5)
        last = counters(sock)
        sock.close()
    except (OSError, ValueError, KeyError):
        pass  # the run ended early: its exit status says why
    finally:
        out, err = proc.communicate(timeout=60)
    if proc.returncode != 0 or last is None:
        return {"op": op, "loss": loss, "failed": err.strip().splitlines()[:1]}
    result = json.loads(out.splitlines()[-1])
    delta = {k: last[k] - first[k] for k in last}
    lost = delta["tx_packets"] - delta["rx_packets"]
    resent = sum(delta[k] for k in RESENT)
    return {"op": op, "loss": loss, "MBps": result["bw_avg_MBps"], "frames": delta["tx_packets"], "lost": lost,
            "resent": resent, "resent_per_lost": resent / lost if lost > 0 else 0.0,
            "timeouts": delta["timeouts"], "retransmits": delta["retransmits"],
            "seq_naks": delta["seq_naks_sent"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perf", default="build/app/rnic-perf/rnic-perf")
    ap.add_argument("--loss", type=float, default=0.01)
    ap.add_argument("--ops", default="write,read")
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--qps", type=int, default=4)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--runs", type=int, default=1, help="interleaved runs of each; medians are reported")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:split])
    args.engine = argv[split + 1:]  # engine arguments for every run
    print(f"{'op':6} {'lossless MB/s':>13} {'lossy MB/s':>10} {'ratio':>6} {'lost':>7} {'resent':>8} "
          f"{'resent/lost':>11} {'timeouts':>8}")
    for op in args.ops.split(","):
        clean, lossy = [], []
        for _ in range(args.runs):
            clean.append(run(args, op, 0.0))
            lossy.append(run(args, op, args.loss))
        print(json.dumps({"lossless": clean, "lossy": lossy}), file=sys.stderr)
        failed = [r for r in clean + lossy if "failed" in r]
        if failed:
            print(f"{op:6} failed: {failed[0]['failed']}")
            continue
        mid = sorted(lossy, key=lambda r: r["MBps"])[len(lossy) // 2]
        base = statistics.median(r["MBps"] for r in clean)
        print(f"{op:6} {base:13.1f} {mid['MBps']:10.1f} {mid['MBps'] / base:6.2f} {mid['lost']:7d} "
              f"{mid['resent']:8d} {mid['resent_per_lost']:11.2f} {mid['timeouts']:8d}")


if __name__ == "__main__":
    main()
