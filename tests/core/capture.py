#!/usr/bin/python3
"""The engine's --pcap captures as tshark reads them (doc/capture.md). rnicd runs the engine with the capture
options; rnic-perf, its client, makes the traffic on the loopback pair.
  full      timestamps within a second of the wall clock, an interface per device and port
            (rnicN/<ethdev>), each frame's direction: every frame once outbound on the sender's interface
            and once inbound on the receiver's; the statistics blocks count every frame written and none
            lost; rnic-pktgen parse (libpcap) decodes every frame
  qp        --pcap-filter qp=N: only frames to that QP (one the full capture saw)
  opcode    --pcap-filter opcode=ack,dir=out: only ACKs, only as sent
  snaplen   --pcap-snaplen 128 --pcap-count 50: 50 frames of at most 128 bytes, their original length kept
  lost      a file slower than the ports (a pipe read only after the run): frames lost, and counted in the
            statistics blocks (written + lost = kept)
    capture.py RNICD RNIC_PERF RNIC_PKTGEN SCENARIO
"""
import collections
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

RNICD, PERF, PKTGEN = sys.argv[1:4]
TIMEOUT = 60
IFACES = {"rnic0/net_ring_rnic_lb_a", "rnic1/net_ring_rnic_lb_b"}


def run(tmp, engine_args, perf_args, on_done=None):
    """rnicd with these engine arguments, one rnic-perf run through it, rnicd stopped (its capture closed).
    Returns the wall clock before and after, and rnicd's output."""
    sock = os.path.join(tmp, "rnicd.sock")
    log = open(os.path.join(tmp, "rnicd.log"), "w+")
    t0 = time.time()
    d = subprocess.Popen([RNICD, "--socket", sock, "--", "-l", "0,1", "--no-huge", "-m", "512", "--no-pci",
                          "--file-prefix", f"rnic-cap-{os.getpid()}", "--log-level=lib.eal:warning", "--",
                          *engine_args], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + TIMEOUT
        while not os.path.exists(sock) or "serving on" not in open(log.name).read():
            assert d.poll() is None, open(log.name).read()
            assert time.time() < deadline, "rnicd did not start"
            time.sleep(0.05)
        perf = subprocess.run([PERF, *perf_args], env=dict(os.environ, RNIC_DAEMON=sock), capture_output=True,
                              text=True, timeout=TIMEOUT)
        assert perf.returncode == 0, perf.stdout + perf.stderr
        if on_done:
            on_done()
        d.send_signal(signal.SIGTERM)
        assert d.wait(TIMEOUT) == 0, open(log.name).read()
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
    return t0, time.time(), open(log.name).read()


def tshark(path, *fields):
    cmd = ["tshark", "-r", path, "-d", "udp.port==4791,infiniband", "--disable-protocol", "rpcordma", "-T", "fields"]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.splitlines() if line]


def statistics(path):
    """The Interface Statistics Blocks, read here (tshark shows none of it): interface -> option values."""
    data, off, stats = open(path, "rb").read(), 0, {}
    names = {4: "ifrecv", 5: "ifdrop", 6: "filteraccept", 8: "usrdeliv"}
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        assert blen >= 12 and off + blen <= len(data), f"corrupt block at {off}"
        if btype == 5:
            iface, opts, o = struct.unpack_from("<I", data, off + 8)[0], {}, off + 20
            while o < off + blen - 4:
                code, length = struct.unpack_from("<HH", data, o)
                if code == 0:
                    break
                if code in names:
                    opts[names[code]] = struct.unpack_from("<Q", data, o + 4)[0]
                o += 4 + (length + 3) // 4 * 4
            stats[iface] = opts
        off += blen
    return stats


def per_interface(rows, column=0):
    """Frames per interface, from a tshark column of interface ids."""
    count = collections.Counter(r[column] for r in rows)
    return [count[str(i)] for i in range(len(IFACES))]


def scenario_full(tmp):
    pcap = os.path.join(tmp, "all.pcapng")
    t0, t1, _ = run(tmp, ["--pcap", pcap], ["-o", "write", "-s", "1024", "-q", "4", "-n", "500", "--verify"])
    rows = tshark(pcap, "frame.interface_id", "frame.time_epoch", "frame.interface_name",
                  "frame.interface_description", "frame.packet_flags_direction", "infiniband.bth.opcode",
                  "infiniband.bth.destqp", "infiniband.bth.psn")
    assert len(rows) > 500, len(rows)
    times = [float(r[1]) for r in rows]
    assert t0 - 1 <= min(times) and max(times) <= t1 + 1, (time.ctime(min(times)), time.ctime(t0))
    assert {r[2] for r in rows} == IFACES, {r[2] for r in rows}
    assert all(r[3].startswith("softrnic device rnic") for r in rows), rows[0]
    sides = collections.defaultdict(collections.Counter)
    for r in rows:
        assert r[4] in ("0x00000001", "0x00000002"), r     # inbound, outbound
        sides[(r[2][:5], "in" if r[4] == "0x00000001" else "out")][tuple(r[5:8])] += 1
    # The loopback pair: what one device sends, the other receives, each seen once on each interface.
    for a, b in (("rnic0", "rnic1"), ("rnic1", "rnic0")):
        out, seen = sides[(a, "out")], sides[(b, "in")]
        assert out and out == seen, (f"{a} out, {b} in: (opcode, QP, PSN) only out {dict(out - seen)}, "
                                     f"only in {dict(seen - out)}; capture statistics {statistics(pcap)}")
    stats = statistics(pcap)
    for i, n in enumerate(per_interface(rows)):
        s = stats[i]
        assert s["usrdeliv"] == n and s["ifdrop"] == 0 and s["filteraccept"] == n and s["ifrecv"] == n, (i, s, n)
    parsed = subprocess.run([PKTGEN, "parse", pcap], capture_output=True, text=True, timeout=TIMEOUT)
    lines = parsed.stdout.splitlines()
    assert parsed.returncode == 0 and len(lines) == len(rows), (parsed.stderr, len(lines))
    assert all('"drop": "none"' in line for line in lines)
    print(f"full: {len(rows)} frames, times {time.ctime(min(times))}; interfaces {sorted(IFACES)}; "
          f"each frame out on one side and in on the other; none lost; rnic-pktgen parsed all")


def scenario_qp(tmp):
    # The QPNs of a fresh engine are the same from run to run: the full capture's show which exist.
    probe = os.path.join(tmp, "probe.pcapng")
    run(tmp, ["--pcap", probe], ["-o", "write", "-s", "1024", "-q", "4", "-n", "200"])
    qps = collections.Counter(r[0] for r in tshark(probe, "infiniband.bth.destqp"))
    assert len(qps) >= 2, qps
    qp = qps.most_common(1)[0][0]
    pcap = os.path.join(tmp, "qp.pcapng")
    run(tmp, ["--pcap", pcap, "--pcap-filter", f"qp={int(qp, 16)}"], ["-o", "write", "-s", "1024", "-q", "4",
                                                                        "-n", "200"])
    rows = tshark(pcap, "infiniband.bth.destqp", "frame.interface_id")
    assert rows and all(r[0] == qp for r in rows), collections.Counter(r[0] for r in rows)
    stats = statistics(pcap)
    for i, n in enumerate(per_interface(rows, 1)):
        assert stats[i]["filteraccept"] == n and stats[i]["ifrecv"] > n, (stats[i], n)
    print(f"qp: {len(rows)} frames, all to QP {qp} (of {len(qps)} QPs with traffic)")


def scenario_opcode(tmp):
    pcap = os.path.join(tmp, "acks.pcapng")
    run(tmp, ["--pcap", pcap, "--pcap-filter", "opcode=ack,dir=out"], ["-o", "write", "-s", "1024", "-n", "500"])
    rows = tshark(pcap, "infiniband.bth.opcode", "frame.packet_flags_direction")
    assert rows and all(r == ["17", "0x00000002"] for r in rows), collections.Counter(tuple(r) for r in rows)
    print(f"opcode: {len(rows)} frames, all ACKs as sent")


def scenario_snaplen(tmp):
    pcap = os.path.join(tmp, "snap.pcapng")
    run(tmp, ["--pcap", pcap, "--pcap-snaplen", "128", "--pcap-count", "50"], ["-o", "write", "-s", "1024",
                                                                                 "-n", "500"])
    rows = tshark(pcap, "frame.cap_len", "frame.len")
    assert len(rows) == 50, len(rows)
    assert all(int(r[0]) <= 128 for r in rows) and any(int(r[1]) > 1024 for r in rows), rows[:3]
    print("snaplen: 50 frames, at most 128 bytes each, WRITEs' original length kept")


def scenario_lost(tmp):
    fifo, pcap = os.path.join(tmp, "capture.fifo"), os.path.join(tmp, "lost.pcapng")
    os.mkfifo(fifo)
    drain = threading.Event()

    def reader():       # opens at once (rnicd's open waits for it), reads only once the run is over
        with open(fifo, "rb") as src:
            drain.wait(TIMEOUT)
            with open(pcap, "wb") as dst:
                while chunk := src.read(1 << 16):
                    dst.write(chunk)

    t = threading.Thread(target=reader)
    t.start()
    try:
        _, _, log = run(tmp, ["--pcap", fifo], ["-o", "write", "-s", "1024", "-n", "20000"], on_done=drain.set)
    finally:
        drain.set()
        t.join(TIMEOUT)
    rows = tshark(pcap, "frame.interface_id")
    stats = statistics(pcap)
    lost = sum(s["ifdrop"] for s in stats.values())
    assert lost > 0 and "lost" in log, (stats, log)
    for i, n in enumerate(per_interface(rows)):
        s = stats[i]
        assert s["usrdeliv"] == n and s["usrdeliv"] + s["ifdrop"] == s["filteraccept"], (i, s, n)
    print(f"lost: {len(rows)} frames written, {lost} lost and counted (the file's statistics and rnicd's log)")


def main():
    with tempfile.TemporaryDirectory(prefix="rnic-capture-") as tmp:
        globals()["scenario_" + sys.argv[4]](tmp)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
