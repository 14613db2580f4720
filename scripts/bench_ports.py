"""Real port paths for scripts/bench.py --port: two softrnic processes (rnic-perf server and client) over
net_af_xdp or net_af_packet on a veth pair between two network namespaces this module makes and removes, or
over net_memif between two processes; and, as the same-run baseline, the raw rate of the same ports
(rnic-baseline --ethdev: one process sends frames within a window the other's credits open, the other
counts what arrives).

Two veth pairs join the namespaces: the data pair carries the ports' frames only (no kernel address; AF_XDP's
program takes every frame of its queue from the kernel), the control pair 10.98.0.1/2 the TCP exchange of
rnic-perf's server and client. softrnic's addresses are 10.99.0.1 (server) and 10.99.0.2 (client), which the
raw frames use too. CPUs (a 2-core machine): the receiving side's data path on CPU 1 (the server's worker,
the raw receiver), the sending side's on CPU 0 (the client's own thread, all its stages: --stages devices;
the raw sender); the server's main thread sleeps on its TCP socket.

Per run: raw frames of a 64 B WRITE (138 B), rnic-perf 64 B WRITE (-t 128), rnic-perf 64 KB WRITE (-t 16),
raw frames of the 64 KB WRITE's middle packets (its path MTU, from rnic-perf's JSON). Ratios: the message
rate to the raw frame rate at 138 B; the goodput to the raw rate's payload (frames/s x MTU x 8).
"""
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

KINDS = ("af_xdp", "af_packet", "memif")
EAL = ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "--log-level=error"]
# 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 16 RETH + 64 payload + 4 ICRC; a middle packet has no RETH
FRAME_64B = 138
HEADERS_MIDDLE = 14 + 20 + 8 + 12 + 4


def af_xdp_unavailable():
    """Why net_af_xdp cannot run here (a DPDK without the driver, a kernel without AF_XDP sockets), or None."""
    if not glob.glob("/usr/lib/*/dpdk/pmds-*/librte_net_af_xdp.so*"):
        return "DPDK has no net_af_xdp driver here"
    try:
        socket.socket(44, socket.SOCK_RAW).close()    # AF_XDP
    except OSError as e:
        return f"no AF_XDP sockets (kernel or privileges): {e}"
    return None


class Skip(Exception):
    """A port kind the machine cannot run, with the reason."""


def sh(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p


class Ports:
    """The ports of one kind: their namespaces and interfaces (veth kinds), EAL vdev arguments, MACs."""

    def __init__(self, kind, tmp):
        self.kind, self.tmp = kind, tmp
        tag = f"{os.getpid() % 100000}"
        self.ns = [f"rnic-bp-a-{tag}", f"rnic-bp-b-{tag}"] if kind != "memif" else [None, None]
        self.data = [f"rbpa{tag}", f"rbpb{tag}"]
        self.ctl = [f"rbca{tag}", f"rbcb{tag}"]
        self.prefixes = [f"rnic-bp-a-{tag}", f"rnic-bp-b-{tag}"]
        self.made = []
        self.pairs = 0    # process pairs so far: each memif pair has a socket of its own

    def __enter__(self):
        if self.kind == "memif":
            self.mac = ["02:00:00:00:00:a1", "02:00:00:00:00:a2"]
            self.server_host = "127.0.0.1"
            return self
        if os.geteuid() != 0:
            raise Skip("needs root (network namespaces, veth)")
        why = af_xdp_unavailable() if self.kind == "af_xdp" else None
        if why:
            raise Skip(why)
        if sh(["ip", "netns", "add", self.ns[0]], check=False).returncode != 0:
            raise Skip("cannot make a network namespace")
        self.made.append(self.ns[0])
        sh(["ip", "netns", "add", self.ns[1]])
        self.made.append(self.ns[1])
        for pair in (self.data, self.ctl):
            sh(["ip", "link", "add", pair[0], "netns", self.ns[0], "type", "veth", "peer", "name", pair[1],
                "netns", self.ns[1]])
        for side in (0, 1):
            ns = self.ns[side]
            sh(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            sh(["ip", "-n", ns, "addr", "add", f"10.98.0.{side + 1}/24", "dev", self.ctl[side]])
            for dev in (self.data[side], self.ctl[side], "lo"):
                sh(["ip", "-n", ns, "link", "set", dev, "up"])
        self.mac = [sh(["ip", "-n", self.ns[s], "-br", "link", "show", self.data[s]]).stdout.split()[2]
                    for s in (0, 1)]
        self.server_host = "10.98.0.1"
        return self

    def __exit__(self, *exc):
        for ns in self.made:
            sh(["ip", "netns", "del", ns], check=False)
        for p in self.prefixes:
            shutil.rmtree(f"/var/run/dpdk/{p}", ignore_errors=True)

    def engine_queues(self):
        """The queue pairs a softrnic port gets: two (one shard's requester and responder TX queues), or on
        net_af_xdp the one a veth offers (veth reports no combined channels), which the engine's shard shares."""
        return 1 if self.kind == "af_xdp" else 2

    def vdev(self, side, queues):
        """EAL's --vdev for side 0 (server, receiver) or 1 (client, sender)."""
        if self.kind == "memif":
            role = "server" if side == 0 else "client"
            return (f"--vdev=net_memif0,role={role},socket={self.tmp}/memif{self.pairs}.sock,socket-abstract=no,"
                    f"mac={self.mac[side]}")
        if self.kind == "af_packet":
            return f"--vdev=net_af_packet0,iface={self.data[side]},qpairs={queues}"
        return f"--vdev=net_af_xdp0,iface={self.data[side]},queue_count={queues}"

    def port(self):
        return {"memif": "net_memif0", "af_packet": "net_af_packet0", "af_xdp": "net_af_xdp0"}[self.kind]

    def wrap(self, side, cmd):
        return cmd if self.ns[side] is None else ["ip", "netns", "exec", self.ns[side]] + cmd


def pair(ports, server, client, ready, timeout):
    """Run server (side 0) and client (side 1) commands; ready(): whether the client may start. Returns
    (client exit status, server exit status, server output, client output)."""
    slog, clog = (open(os.path.join(ports.tmp, n), "w+") for n in ("server.log", "client.log"))
    srv = subprocess.Popen(ports.wrap(0, server), stdout=slog, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not ready() and srv.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        cli = subprocess.run(ports.wrap(1, client), stdout=clog, stderr=subprocess.STDOUT, timeout=timeout)
        rc = cli.returncode
    finally:
        if srv.poll() is None:
            srv.terminate()
        try:
            srv.wait(timeout=15)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    slog.seek(0)
    clog.seek(0)
    s, c = slog.read(), clog.read()
    slog.close()
    clog.close()
    return rc, srv.returncode, s, c


def listening(ports, tcp):
    """ready() for rnic-perf: the server's TCP port listens."""
    def ready():
        out = sh(ports.wrap(0, ["ss", "-ltn"]), check=False).stdout
        return f":{tcp} " in out
    return ready


def json_lines(text):
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.communicate(timeout=15)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def raw(build, ports, frame, seconds):
    """The raw rate of frame-byte frames from the client's side to the server's: the receiver's line. The
    receiver prints it and drains the port; the sender stops (SIGTERM) before the receiver does (a memif
    sender whose peer goes away under its TX burst may crash)."""
    bl = os.path.join(build, "app/rnic-baseline/rnic-baseline")
    ports.pairs += 1
    rx = [bl, "--ethdev", ports.port(), "--receive", "--seconds", str(seconds), "--",
          "--lcores", "0@1", "--file-prefix", ports.prefixes[0], ports.vdev(0, 1)] + EAL
    tx = [bl, "--ethdev", ports.port(), "--send", ports.mac[0], "--frame", str(frame), "--seconds", "60", "--",
          "--lcores", "0@0", "--file-prefix", ports.prefixes[1], ports.vdev(1, 1)] + EAL
    recv = subprocess.Popen(ports.wrap(0, rx), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.3)    # the receiver's port bound first (memif: its socket), else the first frames are lost
    send = subprocess.Popen(ports.wrap(1, tx), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, line = [], None
    try:
        deadline = time.monotonic() + seconds + 60
        while line is None and time.monotonic() < deadline:
            text = recv.stdout.readline()    # the receiver ends (EOF) when it fails
            if not text:
                break
            out.append(text)
            if text.startswith('{"bench": "port_forward"'):
                line = json.loads(text)
    finally:
        sout = stop(send)
        out.append(stop(recv))
    if line is None:
        raise RuntimeError(f"rnic-baseline --ethdev {ports.port()} --receive failed:\n{''.join(out)}\n"
                           f"sender:\n{sout}")
    sent = [x for x in json_lines(sout) if x.get("bench") == "port_send"]
    line["sent_mpps"] = sent[0]["mpps"] if sent else None    # over the sender's whole run
    line["frame_sent"] = frame
    return line


def perf(build, ports, args, seconds):
    """One rnic-perf server/client run; the client's JSON result."""
    rp = os.path.join(build, "app/rnic-perf/rnic-perf")
    tcp = 20000 + (os.getpid() + int(time.monotonic() * 1000)) % 20000
    ports.pairs += 1
    common = ["--port", ports.port()]
    server = [rp, "--server", "-p", str(tcp), "--ip", "10.99.0.1", "--neigh", f"10.99.0.2,{ports.mac[1]}", "--stages", "one"]
    queues = ports.engine_queues()
    server += common + ["--", "-l", "0,1", "--file-prefix", ports.prefixes[0], ports.vdev(0, queues)] + EAL
    client = [rp, ports.server_host, "-p", str(tcp)] + args + ["-D", str(seconds), "-Q", "1", "--json"]
    client += ["--ip", "10.99.0.2", "--neigh", f"10.99.0.1,{ports.mac[0]}", "--stages", "devices"] + common
    client += ["--", "--lcores", "0@0", "--file-prefix", ports.prefixes[1], ports.vdev(1, queues)] + EAL
    crc, src, slog, clog = pair(ports, server, client, listening(ports, tcp), timeout=seconds + 90)
    res = [x for x in json_lines(clog) if "msg_rate_Mpps" in x]
    if crc != 0 or not res:
        raise RuntimeError(f"rnic-perf {' '.join(args)} over {ports.port()}: client {crc}, server {src}:\n"
                           f"server:\n{slog}\nclient:\n{clog}")
    return res[0]


def one_run(build, ports, seconds, run, emit):
    """The four measurements of a run; each emitted, and returned by name."""
    got = {}

    def keep(name, d):
        d.update({"port_kind": ports.kind, "case": name, "run": run})
        emit(d)
        got[name] = d
    keep("raw_138B", raw(build, ports, FRAME_64B, seconds))
    keep("write_64B_msg_rate", perf(build, ports, ["-o", "write", "-s", "64", "-t", "128"], seconds))
    big = perf(build, ports, ["-o", "write", "-s", "65536", "-t", "16"], seconds)
    keep("write_64KB_goodput", big)
    keep("raw_mtu", raw(build, ports, HEADERS_MIDDLE + big["mtu"], seconds))
    return got


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def summarize(kind, runs):
    """The medians over runs and the two ratios of issue 22: message rate / raw frame rate at 138 B, goodput /
    the raw rate's payload at the MTU."""
    mtu = runs[-1]["write_64KB_goodput"]["mtu"]
    raw64 = median([r["raw_138B"]["mpps"] for r in runs])
    rawmtu = median([r["raw_mtu"]["mpps"] for r in runs]) * mtu * 8 / 1e3
    msg = median([r["write_64B_msg_rate"]["msg_rate_Mpps"] for r in runs])
    gput = median([r["write_64KB_goodput"]["bw_avg_Gbps"] for r in runs])
    return [
        {"summary": "port_write_64B_msg_rate", "port_kind": kind, "value": msg, "unit": "Mpps",
         "baseline": "raw 138 B frames, Mpps", "baseline_value": raw64, "ratio": msg / raw64 if raw64 else None,
         "runs": len(runs)},
        {"summary": "port_write_64KB_goodput", "port_kind": kind, "value": gput, "unit": "Gb/s",
         "baseline": f"raw payload of {HEADERS_MIDDLE + mtu} B frames (MTU {mtu}), Gb/s", "baseline_value": rawmtu,
         "ratio": gput / rawmtu if rawmtu else None, "runs": len(runs)},
    ]


def run_kind(build, kind, runs, seconds, emit):
    """Every run of one port kind, then its summary lines; a kind the machine cannot run emits a "skipped" line
    with the reason. Returns the summary lines (none when skipped)."""
    tmp = tempfile.mkdtemp(prefix="rnic-bench-ports-")
    done = []
    try:
        with Ports(kind, tmp) as ports:
            for r in range(runs):
                done.append(one_run(build, ports, seconds, r, emit))
    except Skip as why:
        if done:    # some runs went, and one failed: not a skip
            raise RuntimeError(f"{kind}: run {len(done)}: {why}") from None
        emit({"port_kind": kind, "skipped": str(why)})
        return []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = summarize(kind, done)
    for x in lines:
        emit(x)
    return lines
