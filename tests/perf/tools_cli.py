#!/usr/bin/python3
"""The tools' one command line and their failures: every bad option or value exits 2 and every failed run
1, each with its reason on stderr (rnic-pingpong exited 1 with a bare usage line for a bad value; rnic-pktgen
said nothing of the command it did not know); EAL options after "--" are added to the defaults, not put in
their place ("-- --file-prefix P" alone made EAL want hugepages).
    tools_cli.py RNIC_PERF RNIC_PINGPONG RNIC_BASELINE RNIC_PKTGEN
"""
import os
import shutil
import signal
import subprocess
import sys
import time

EAL_SMALL = ["-m", "512"]


def run(argv, timeout=60):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def expect(argv, code, needles, timeout=60):
    """argv exits with code, stderr holding each needle (and the tool's name: a reason, not a bare usage)."""
    rc, out, err = run(argv, timeout)
    tool = os.path.basename(argv[0])
    assert rc == code, f"{argv}: exit {rc}, expected {code}\nstdout: {out}\nstderr: {err}"
    for needle in [f"{tool}: "] + needles:
        assert needle in err, f"{argv}: {needle!r} not in stderr {err!r}"
    return out, err


def prefix(name):
    return f"{name}-{os.getpid()}"


def remove_runtime_dir(p):
    shutil.rmtree(f"/var/run/dpdk/{p}", ignore_errors=True)


def pingpong(pp):
    expect([pp, "--server", "18515", "--size", "abc"], 2, ["--size 'abc'", "1 .. 67108864"])
    expect([pp, "--server", "0"], 2, ["--server '0'", "a TCP port"])
    expect([pp, "--client", "nohostport"], 2, ["--client 'nohostport'", "HOST:PORT"])
    expect([pp, "--iters", "5"], 2, ["give exactly one"])
    expect([pp, "--server", "1", "--frobnicate"], 2, ["--frobnicate", "unknown option"])
    expect([pp, "--server", "1", "--size"], 2, ["--size", "missing value"])
    expect([pp, "--server", "1", "extra"], 2, ["extra", "unexpected argument"])
    rc, out, _ = run([pp, "--help"])
    assert rc == 0 and out.startswith("usage: rnic-pingpong") and "-- EAL options" in out, (rc, out)
    rc, out, _ = run([pp, "--version"])
    assert rc == 0 and "softrnic" in out, (rc, out)
    # A run that fails (no server on the port): exit 1 and why. The engine started with "--file-prefix"
    # alone after "--": the defaults (--no-huge, ...) stayed.
    p = prefix("pp-cli")
    try:
        _, err = expect([pp, "--client", "127.0.0.1:1", "--", "--file-prefix", p] + EAL_SMALL, 1,
                        ["exchange failed"])
        assert "did not start" not in err, err
    finally:
        remove_runtime_dir(p)


def perf(rp):
    # "-- --file-prefix P": the defaults stay (no hugepages needed), and P names the runtime directory.
    p = prefix("perf-cli")
    try:
        rc, out, err = run([rp, "-n", "10", "-s", "64", "--json", "--", "--file-prefix", p] + EAL_SMALL)
        assert rc == 0 and '"iterations": 10' in out, (rc, out, err)
    finally:
        remove_runtime_dir(p)
    expect([rp, "-n", "10", "--", "--no-such-eal-option"], 2, ["the engine did not start"])
    perf_stalled_sigterm(rp)


def perf_stalled_sigterm(rp):
    """A stalled run (every frame lost, a loss timer of 4.3 s: nothing completes or fails for half a minute)
    ends on SIGTERM within a few seconds, exit 1 and why; it waited 10 s for a completion first."""
    p = subprocess.Popen([rp, "-o", "write", "-s", "64", "-q", "4", "-D", "30", "-u", "20", "--"] + EAL_SMALL +
                         ["--", "--fault", "drop=1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in p.stderr:   # its first progress line: the run is under way
            lines.append(line)
            if line.startswith("rnic-perf: 1 s,"):
                break
        assert lines and lines[-1].startswith("rnic-perf: 1 s,"), lines
        t = time.monotonic()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        took = time.monotonic() - t
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1 and "interrupted: no completion" in err, (p.returncode, err)
    assert took < 5, f"{took:.1f} s from SIGTERM to exit"


def baseline(bl):
    expect([bl, "--seconds", "x"], 2, ["--seconds 'x'"])
    expect([bl, "--seconds", "0"], 2, ["--seconds '0'"])
    expect([bl, "--frobnicate"], 2, ["'--frobnicate'", "usage"])
    expect([bl, "--", "-l", "0,1", "--", "--stages", "one"], 2, ["no engine options"])
    expect([bl, "--seconds"], 2, ["'--seconds' needs a value"])
    expect([bl, "--frame", "10"], 2, ["--frame '10'"])
    expect([bl, "--ethdev", "net_x0"], 2, ["one of --send and --receive"])
    expect([bl, "--send", "02:00:00:00:00:01"], 2, ["one of --send and --receive"])
    expect([bl, "--ethdev", "net_x0", "--send", "zz"], 2, ["--send 'zz'"])
    expect([bl, "--ethdev", "net_x0", "--receive", "--probe"], 2, ["no --probe"])
    expect([bl, "--ethdev", "net_x0", "--receive", "--"] + EAL_SMALL, 1, ["--ethdev net_x0: no such ethdev"])
    rc, out, err = run([bl, "--seconds", "0.05", "--"] + EAL_SMALL, timeout=60)
    assert rc == 0 and "memcpy" in out and out.count("baseline_forward") == 2, (rc, out, err)
    # the machine-mode probe: the 138 B forwarding and the memcpy only
    rc, out, err = run([bl, "--probe", "--seconds", "0.05", "--"] + EAL_SMALL, timeout=60)
    assert rc == 0 and "memcpy" in out and out.count("baseline_forward") == 1 and '"frame_bytes": 138' in out, \
        (rc, out, err)


def pktgen(pg):
    expect([pg], 2, ["no command"])
    expect([pg, "frobnicate"], 2, ["'frobnicate'", "not a command"])
    expect([pg, "parse", "/nonexistent/x.pcap"], 1, ["/nonexistent/x.pcap"])


def main():
    rp, pp, bl, pg = sys.argv[1:5]
    pingpong(pp)
    perf(rp)
    baseline(bl)
    pktgen(pg)
    print("tools: bad options exit 2 and failed runs 1, each with its reason; EAL options merge")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
