#!/usr/bin/python3
"""rnicd as an operator meets it (doc/rnicd.md "Running it"), one scenario per argument:
    operator.py RNICD CLIENT SCENARIO
  socket      a second daemon on a live socket refuses to start and leaves the first one's socket (still
              served); a stale socket is replaced; a file that is not a socket is refused and kept;
              --socket-mode / --socket-group set the socket's permissions
  config      configuration errors name FILE:LINE; max-mem takes K/M/G/T suffixes
  sighup      SIGHUP reads the configuration again (a new max-qp holds for the next client); a bad file
              is reported with FILE:LINE and changes nothing; the daemon never dies of it
  systemd     sd_notify READY=1 once serving, RELOADING=1 / READY=1 around a SIGHUP, STOPPING=1; socket
              activation: the socket systemd passes (LISTEN_FDS) is served and left to systemd at exit
  quota       a client refused for memory gets EDQUOT (not "no device") and the daemon logs it once
  clients     /rnicd/stats counts client processes (clients_total) apart from connections
Every wait is bounded; every daemon started is stopped (or killed) before the test ends.
"""
import grp
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import telemetry  # noqa: E402

RNICD, CLIENT = sys.argv[1], sys.argv[2]
TIMEOUT = 30
EAL = ["-l", "0,1", "--no-huge", "-m", "512", "--no-pci", "--log-level=lib.eal:warning"]


class Daemon:
    """One rnicd: its socket in the test's directory, its own file prefix, its stderr kept."""

    started = []

    def __init__(self, tmp, args=(), sock=None, env=None, pass_fds=(), wrapper=()):
        n = len(Daemon.started) + 1
        self.prefix = f"rnicd-op-{os.getpid()}-{n}"
        self.sock = sock or os.path.join(tmp, "rnicd.sock")
        self.log = open(os.path.join(tmp, f"rnicd-{n}.log"), "w+")
        cmd = [*wrapper, RNICD, "--socket", self.sock, *args, "--", *EAL, "--file-prefix", self.prefix]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     pass_fds=pass_fds)
        Daemon.started.append(self)

    def wait_serving(self):
        deadline = time.time() + TIMEOUT
        while "serving on" not in self.output():
            assert self.proc.poll() is None, f"rnicd exited at start ({self.proc.returncode}):\n{self.output()}"
            assert time.time() < deadline, f"rnicd did not start:\n{self.output()}"
            time.sleep(0.05)
        return self

    def output(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def wait_log(self, text, count=1):
        deadline = time.time() + TIMEOUT
        while self.output().count(text) < count:
            assert time.time() < deadline, f"rnicd never logged {text!r}:\n{self.output()}"
            time.sleep(0.05)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("rnicd did not stop on SIGTERM")
        return self.proc.returncode

    def telemetry(self, cmd):
        return telemetry.query(self.prefix, cmd)


def reachable(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def client(sock, *args):
    env = dict(os.environ, RNIC_DAEMON=sock)
    r = subprocess.run([CLIENT, *args], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    return r.returncode, r.stdout + r.stderr


def run_rnicd(args, timeout=TIMEOUT):
    r = subprocess.run([RNICD, *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def scenario_socket(tmp):
    first = Daemon(tmp).wait_serving()
    try:
        second = Daemon(tmp)
        rc = second.proc.wait(TIMEOUT)
        assert rc == 1, (rc, second.output())
        assert "another daemon is serving on it" in second.output(), second.output()
        assert stat.S_ISSOCK(os.lstat(first.sock).st_mode), "the first daemon's socket is gone"
        assert reachable(first.sock), "the first daemon is no longer reachable"
        assert not os.path.exists(f"/var/run/dpdk/{second.prefix}"), "the refused daemon started EAL"
        assert client(first.sock, "open")[0] == 0
    finally:
        assert first.stop() == 0
    assert not os.path.exists(first.sock), "the daemon left its socket"

    stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stale.bind(first.sock)
    stale.close()                   # bound, never listened: what a killed daemon leaves
    d = Daemon(tmp, ["--socket-mode", "0640", "--socket-group", grp.getgrgid(65534).gr_name]).wait_serving()
    st = os.stat(d.sock)
    assert "removing a stale socket" in d.output(), d.output()
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == 65534, (oct(st.st_mode), st.st_gid)
    assert d.stop() == 0

    plain = os.path.join(tmp, "not-a-socket")
    with open(plain, "w") as f:
        f.write("keep me\n")
    d = Daemon(tmp, sock=plain)
    assert d.proc.wait(TIMEOUT) == 1 and "is not a socket" in d.output(), d.output()
    with open(plain) as f:
        assert f.read() == "keep me\n"
    print("socket: a live socket refused (and kept, still served), a stale one replaced, a file kept; "
          "mode 0640, group 65534")


def scenario_config(tmp):
    conf = os.path.join(tmp, "bad.conf")
    cases = [("max-qp 4\n\n# a comment\nmax-cq lots\n", f"{conf}:4: max-cq: 'lots' is not a number"),
             ("max-mem 1G\nfrobnicate 3\n", f"{conf}:2: frobnicate: not an option of rnicd"),
             ("max-qp 4 5\n", f"{conf}:1: expected 'name value'"),
             ("max-mem 3X\n", f"{conf}:1: max-mem: '3X' is not a number"),
             ("socket-mode 0999\n", f"{conf}:1: socket-mode: '0999' is not a file mode"),
             ("socket-group no-such-group-here\n", f"{conf}:1: socket-group: 'no-such-group-here' is no group"),
             ("max-qp " + "9" * 600 + "\n", f"{conf}:1: line longer than")]
    for text, want in cases:
        with open(conf, "w") as f:
            f.write(text)
        rc, out = run_rnicd(["--config", conf, "--help"])
        assert rc == 2 and want in out, (text[:40], rc, out)
    rc, out = run_rnicd(["--max-mem", "lots", "--help"])
    assert rc == 2 and "--max-mem: 'lots'" in out, out
    with open(conf, "w") as f:
        f.write("max-mem 1G\nmax-qp 8\n")
    d = Daemon(tmp, ["--config", conf, "--max-cq", "7"]).wait_serving()
    assert "8 QPs, 7 CQs, 256 MRs, 16 PDs, 1073741824 bytes" in d.output(), d.output()
    assert d.stop() == 0
    print(f"config: {len(cases) + 1} bad configurations refused with FILE:LINE (or the option); max-mem 1G")


def reload_with(d, conf, text, logged, count=1):
    """Write the configuration file, SIGHUP the daemon, wait for its log line (the count-th of them)."""
    with open(conf, "w") as f:
        f.write(text)
    d.signal(signal.SIGHUP)
    d.wait_log(logged, count)


def scenario_sighup(tmp):
    conf = os.path.join(tmp, "rnicd.conf")
    with open(conf, "w") as f:
        f.write("max-qp 8\n")
    d = Daemon(tmp, ["--config", conf]).wait_serving()
    try:
        rc, out = client(d.sock, "qps", "10")
        assert rc == 3 and "qps: 8 Disk quota exceeded" in out, out
        reload_with(d, conf, "max-qp 3\nmax-mem 2G\n", "SIGHUP: configuration read again: per client 3 QPs")
        rc, out = client(d.sock, "qps", "10")
        assert rc == 3 and "qps: 3 Disk quota exceeded" in out, out
        reload_with(d, conf, "# broken\nmax-qp none\n", "the running one stays")
        assert f"{conf}:2: max-qp: 'none'" in d.output(), d.output()
        rc, out = client(d.sock, "qps", "10")
        assert rc == 3 and "qps: 3 " in out, out     # the last good configuration holds
        reload_with(d, conf, "max-qp 3\nsocket /tmp/elsewhere.sock\n", "change at a restart only")
        assert reachable(d.sock) and not os.path.exists("/tmp/elsewhere.sock")
        # Tenant lines are read again too: a quota set, kept through a bad file, gone when the line goes.
        loaded = "SIGHUP: configuration read again: per client 8 QPs"
        reload_with(d, conf, "max-qp 8\ntenant uid=0 max-qp 5\n", loaded)
        rc, out = client(d.sock, "qps", "10")
        assert rc == 3 and "qps: 5 Disk quota exceeded" in out, out
        reload_with(d, conf, "tenant uid=0 max-qp 2\nmax-qp none\n", "the running one stays", 2)
        rc, out = client(d.sock, "qps", "10")
        assert rc == 3 and "qps: 5 " in out, out
        reload_with(d, conf, "max-qp 8\n", loaded, 2)
        rc, out = client(d.sock, "qps", "10")
        assert rc == 3 and "qps: 8 " in out, out
        assert d.proc.poll() is None, "SIGHUP ended the daemon"
    finally:
        assert d.stop() == 0
    print("sighup: max-qp 8 -> 3 for the next client; a bad file reported at its line, nothing changed; "
          "socket unchanged until a restart; a tenant's quota read again, kept through a bad file, dropped with "
          "its line; the daemon lives on")


def notifications(ns, seconds=TIMEOUT):
    ns.settimeout(seconds)
    return ns.recv(4096).decode()


def scenario_systemd(tmp):
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    npath = os.path.join(tmp, "notify.sock")
    ns.bind(npath)
    env = dict(os.environ, NOTIFY_SOCKET=npath)
    d = Daemon(tmp, env=env)
    try:
        msg = notifications(ns)
        assert "READY=1" in msg and f"MAINPID={d.proc.pid}" in msg, msg
        assert reachable(d.sock), "READY=1 before the socket listens"
        d.signal(signal.SIGHUP)
        assert notifications(ns) == "RELOADING=1"
        assert notifications(ns) == "READY=1"
        d.signal(signal.SIGTERM)
        assert notifications(ns) == "STOPPING=1"
    finally:
        assert d.stop() == 0

    # Socket activation: the listening socket on fd 3, LISTEN_PID naming rnicd itself.
    lpath = os.path.join(tmp, "activated.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ls.bind(lpath)
    ls.listen(16)

    # As systemd does: the socket moved to fd 3, LISTEN_PID the pid rnicd will have (the shell's: it execs).
    hand_over = ["/bin/sh", "-c", f'exec 3<&{ls.fileno()}; LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "sh"]
    d = Daemon(tmp, sock=os.path.join(tmp, "ignored.sock"), pass_fds=(ls.fileno(),), wrapper=hand_over)
    try:
        d.wait_serving()
        assert f"serving on {lpath} (from systemd)" in d.output(), d.output()
        rc, out = client(lpath, "open")
        assert rc == 0, out
        assert not os.path.exists(os.path.join(tmp, "ignored.sock"))
    finally:
        assert d.stop() == 0
    assert stat.S_ISSOCK(os.lstat(lpath).st_mode), "rnicd removed systemd's socket"
    print("systemd: READY=1 (with MAINPID) once listening, RELOADING=1/READY=1 on SIGHUP, STOPPING=1; "
          "an activated socket served and left to systemd")


def scenario_quota(tmp):
    d = Daemon(tmp, ["--max-mem", "4096"]).wait_serving()
    try:
        rc, out = client(d.sock, "open")
        assert rc == 3 and "open: Disk quota exceeded" in out, out
        assert "over quota" in out and "no device" not in out, out
        d.wait_log("refused")
        assert d.output().count("refused") == 1, d.output()
    finally:
        assert d.stop() == 0
    print("quota: open over max-mem -> EDQUOT and the client says why; one line in the daemon's log")


def scenario_clients(tmp):
    d = Daemon(tmp).wait_serving()
    try:
        before = d.telemetry("/rnicd/stats")
        for _ in range(2):
            rc, out = client(d.sock, "open-all")
            assert rc == 0 and "2 devices opened" in out, out
        after = d.telemetry("/rnicd/stats")
        # Each process: one connection to list the devices, one per device.
        assert after["connections_total"] - before["connections_total"] == 6, (before, after)
        assert after["clients_total"] - before["clients_total"] == 2, (before, after)
    finally:
        assert d.stop() == 0
    print("clients: 2 processes of 3 connections each: clients_total +2, connections_total +6")


def main():
    scenario = sys.argv[3]
    with tempfile.TemporaryDirectory(prefix="rnicd-op-") as tmp:
        try:
            globals()["scenario_" + scenario](tmp)
        finally:
            for d in Daemon.started:    # a failed check may leave one running
                if d.proc.poll() is None:
                    d.proc.kill()
                    d.proc.wait()
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
