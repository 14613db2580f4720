"""DPDK telemetry of a running process (its v2 socket under /var/run/dpdk/<file prefix>), for the Python
tests: query(prefix, "/rnic/stats,0") is the command's reply."""
import json
import socket


def query(prefix, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2")
        s.recv(1 << 16)
        s.send(cmd.encode())
        return json.loads(s.recv(1 << 20).decode())[cmd.split(",")[0]]
    finally:
        s.close()
