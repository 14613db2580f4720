#!/usr/bin/python3
"""Telemetry that does not fit one reply (DPDK's telemetry drops what exceeds 16 KB): /rnic/qps pages
reach every QP of a device, /rnic/lcores lists every stage of an lcore, /rnic/stats takes a device index.
The workload: rnic-perf with 300 QPs, every stage of both devices on one lcore (10 stages).
    telemetry_pages.py RNIC_PERF
"""
import json
import os
import socket
import subprocess
import sys
import time

QPS = 300


def query(sock, cmd):
    sock.send(cmd.encode())
    return json.loads(sock.recv(1 << 20).decode())[cmd.split(",")[0]]


def connect(prefix, proc):
    path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
    deadline = time.time() + 30
    while True:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "no telemetry socket"
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            sock.connect(path)
            json.loads(sock.recv(1 << 16).decode())  # the greeting
            return sock
        except OSError:
            time.sleep(0.1)


def all_qps(sock, dev):
    """Every page of /rnic/qps for one device: the QP names, and the page sizes."""
    seen, pages, start = {}, [], 0
    while start >= 0 and len(pages) < 1000:
        page = query(sock, f"/rnic/qps,{dev},{start}")
        assert page["device"] == f"rnic{dev}", page
        assert len(page["qps"]) <= 16, len(page["qps"])
        pages.append(len(page["qps"]))
        for name, qp in page["qps"].items():
            assert name not in seen, f"{name} on two pages"
            assert "packets_sent" in qp and "state" in qp, qp
            seen[name] = qp
        start = page["next"]
    return seen, pages, page["qps_total"]


def main():
    perf = sys.argv[1]
    prefix = f"rnic-pages-{os.getpid()}"
    cmd = [perf, "-o", "write", "-s", "64", "-q", str(QPS), "-t", "2", "-D", "5", "--stages", "devices=1",
           "--", "-l", "0,1", "--no-huge", "-m", "512", "--no-pci", "--file-prefix", prefix, "--log-level=error"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sock = connect(prefix, proc)
        deadline = time.time() + 30
        while (query(sock, "/rnic/qps,0") or {"qps_total": 0})["qps_total"] < QPS:  # the devices and QPs come
            assert time.time() < deadline, "the QPs never all existed"
            time.sleep(0.2)
        for dev in (0, 1):
            qps, pages, total = all_qps(sock, dev)
            assert total == QPS and len(qps) == QPS, (dev, total, len(qps), pages)
        short = query(sock, "/rnic/qps,1,0,5")
        assert len(short["qps"]) == 5 and short["next"] > 0, short
        lcores = query(sock, "/rnic/lcores")
        stages = lcores["lcore1"]["stages"]
        assert len(stages) == 10 and sorted(set(stages)) == ["completer", "doorbell", "parser", "requester",
                                                             "responder"], stages
        one = query(sock, "/rnic/stats,1")
        assert list(one) == ["rnic1"] and one["rnic1"]["tx_packets"] >= 0, one.keys()
        assert set(query(sock, "/rnic/stats")) == {"rnic0", "rnic1"}
        for bad in ("/rnic/qps,7", "/rnic/qps,0,x", "/rnic/qps,0,1,2,3", "/rnic/stats,9", "/rnic/qps,-1"):
            assert query(sock, bad) is None, bad
        sock.close()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, (proc.returncode, err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"telemetry: {QPS} QPs per device in pages of 16, 10 stages of lcore 1, one device's stats")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
