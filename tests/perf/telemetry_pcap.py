#!/usr/bin/python3
"""While rnic-perf runs, DPDK telemetry answers /rnic/stats (and /rnic/stages, /rnic/lcores, /rnic/qps) on
the process's telemetry socket; the --pcap file it wrote opens in tshark and decodes as RoCE.
    telemetry_pcap.py RNIC_PERF
"""
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


def query(sock, cmd):
    sock.send(cmd.encode())
    return json.loads(sock.recv(1 << 20).decode())[cmd.split(",")[0]]


def main():
    perf = sys.argv[1]
    prefix = f"rnic-tel-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "run.pcapng")
        cmd = [perf, "-o", "write", "-s", "4096", "-D", "4", "--json", "--pcap", pcap, "--",
               "-l", "0,1", "--no-huge", "-m", "512", "--no-pci", "--file-prefix", prefix, "--log-level=error"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            path = None
            deadline = time.time() + 20
            while path is None and time.time() < deadline:
                found = glob.glob(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2") + \
                    glob.glob(f"/run/user/{os.getuid()}/dpdk/{prefix}/dpdk_telemetry.v2")
                path = found[0] if found else None
                time.sleep(0.1)
            assert path is not None, "no telemetry socket"
            time.sleep(1.5)  # the run is under way
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            sock.connect(path)
            json.loads(sock.recv(1 << 16).decode())  # the greeting
            stats = query(sock, "/rnic/stats")
            assert set(stats) >= {"rnic0", "rnic1"}, stats.keys()
            for dev in ("rnic0", "rnic1"):
                assert stats[dev]["tx_packets"] > 0 and stats[dev]["rx_packets"] > 0, stats[dev]
                assert "rx_drop_bad_icrc" in stats[dev], stats[dev].keys()
            stages = query(sock, "/rnic/stages")
            assert stages["responder"]["busy_count"] > 0 and stages["responder"]["busy_p50_ns"] > 0, stages
            lcores = query(sock, "/rnic/lcores")
            assert lcores and all(v["busy_cycles"] + v["idle_cycles"] > 0 for v in lcores.values()), lcores
            qps = query(sock, "/rnic/qps,0")["qps"]
            assert any(q["packets_sent"] > 0 for q in qps.values()), qps
            sock.close()
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, (proc.returncode, err)
        result = json.loads(out.splitlines()[-1])
        assert result["iterations"] > 0
        tshark = subprocess.run(["tshark", "-r", pcap, "-c", "2000", "-T", "fields", "-e", "infiniband.bth.opcode",
                                 "-e", "infiniband.invariant.crc", "-Y", "infiniband"],
                                capture_output=True, text=True, timeout=120)
        assert tshark.returncode == 0, tshark.stderr
        rows = [r.split("\t") for r in tshark.stdout.splitlines() if r]
        assert len(rows) > 100, len(rows)
        opcodes = {r[0] for r in rows}
        assert {"10", "17"} <= opcodes, opcodes  # RC RDMA WRITE Only and Acknowledge
        print(f"telemetry answered during the run; pcapng: {len(rows)} RoCE frames decoded, opcodes {sorted(opcodes)}")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
