#!/usr/bin/python3
"""rnic-perf with every perftest option of doc/perftest.md's table: each one the table says rnic-perf takes
runs (loopback, short) and what it reports is checked; each one it says is not supported is refused with
exit status 2 and "not supported" on stderr. Every failure says why: a bad option or value exits 2, a failed
run 1, each with its reason on stderr.
    perftest_flags.py RNIC_PERF SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import cpu_share  # noqa: E402

EAL = ["--", "-l", "0,1", "-m", "512"]
PERF = None
NAMES = None  # the directory of rnic-perf and its perftest names
SRC = None  # the source tree


def run(args, timeout=60, perf=None, eal=True):
    p = subprocess.run([perf or PERF] + args + (EAL if eal else []), capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def ok(args, **kw):
    rc, out, err = run(args, **kw)
    assert rc == 0, f"{args}: exit {rc}\n{out}\n{err}"
    return out


def json_lines(out):
    """rnic-perf's JSON results among its output's lines."""
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def jrun(args):
    """The JSON results of a run that must succeed."""
    return json_lines(ok(args + ["--json"]))


def paced(args):
    """The JSON results of a run that must succeed, and the share of it its lcores could run (cpu_share.py):
    a pacer's bucket keeps only microseconds of what it earns while the machine takes its lcore away."""
    p = subprocess.Popen([PERF] + args + ["--json"] + EAL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    samples, deadline = [], time.monotonic() + 60
    try:
        while p.poll() is None and time.monotonic() < deadline:
            samples.append(cpu_share.sample([p.pid]))
            time.sleep(0.02)
        out, err = p.communicate(timeout=10)
    finally:
        p.kill()              # past the deadline: not left running
    assert p.returncode == 0, f"{args}: exit {p.returncode}\n{out}\n{err}"
    share = cpu_share.share(samples)
    assert share > 0, f"{args}: no lcore's schedstat measured over the run ({len(samples)} samples)"
    return json_lines(out), share


def refused(args, code=2, needle=None):
    rc, out, err = run(args)
    assert rc == code, f"{args}: exit {rc}, expected {code}\n{out}\n{err}"
    assert "rnic-perf: " in err and (needle is None or needle in err), f"{args}: stderr {err!r}"


def row(text, size):
    """The report's row of a size (perftest's format: the size first)."""
    m = re.search(rf"^ {size} +(\S+) +(\S+) +(\S+)", text, re.M)
    assert m, f"no row for {size} bytes:\n{text}"
    return [float(x) for x in m.groups()]


def memif_pair(tmp, server_args, client_args):
    """A server and its client over net_memif (two processes): their exit statuses and outputs."""
    sock, port = os.path.join(tmp, "m.sock"), str(20000 + os.getpid() % 20000)
    # perftest's --port (a number: the TCP port) beside the engine's --port (a name: the ethdev).
    srv = subprocess.Popen([PERF, "--server", f"--port={port}", "--port", "net_memif0"] + server_args + [
        "--ip", "10.99.0.1", "--neigh", "10.99.0.2,02:00:00:00:00:c2", "--", "-m", "512", "--file-prefix",
        f"pf-s-{os.getpid()}", f"--vdev=net_memif0,role=server,socket={sock},socket-abstract=no,mac=02:00:00:00:00:c1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        if os.path.exists(sock):
            break
        time.sleep(0.1)
    cli = subprocess.run([PERF, "127.0.0.1", "--port", port, "--port=net_memif0"] + client_args + [
        "--ip", "10.99.0.2", "--neigh", "10.99.0.1,02:00:00:00:00:c1", "--", "-m", "512", "--file-prefix",
        f"pf-c-{os.getpid()}", f"--vdev=net_memif0,role=client,socket={sock},socket-abstract=no,mac=02:00:00:00:00:c2"],
        capture_output=True, text=True, timeout=90)
    sout, serr = srv.communicate(timeout=60)
    return cli.returncode, cli.stdout + cli.stderr, srv.returncode, sout + serr


# ---------------------------------------------------------------------------------------------------------
# One check per option the table says rnic-perf takes (its long name)

def c_all(tmp):
    assert [d["size"] for d in jrun(["-a", "-n", "5"])] == [1 << i for i in range(1, 24)]


def c_atomic_type(tmp):
    d = jrun(["-A", "CMP_AND_SWAP", "-n", "100", "--verify"])[0]
    assert d["op"] == "cmp_swap" and d["verified"], d
    refused(["-A", "SWAP"])


def c_bidirectional(tmp):
    d = jrun(["-b", "-s", "1024", "-n", "200", "--verify"])[0]
    assert d["bidirectional"] and d["iterations"] == 400 and d["verified"], d  # both directions' sum


def c_connection(tmp):
    assert jrun(["-c", "UC", "-s", "1024", "-n", "100", "--verify"])[0]["connection"] == "UC"
    refused(["-c", "XRC"], needle="not supported")


def c_report_cycles(tmp):
    text = ok(["--lat", "-n", "100", "-C"])
    assert "t_min[cycles]" in text, text
    assert row(text, 2)[1] > 100, text  # cycles, not microseconds


def c_ib_dev(tmp):
    assert "Device         : rnic1" in ok(["-d", "rnic1", "-n", "100", "-s", "64"])
    refused(["-d", "nosuch", "-n", "10"], code=1, needle="no such device")


def c_duration(tmp):
    d = jrun(["-D", "0.5", "-s", "64"])[0]
    assert 0.4 < d["seconds"] < 3 and d["iterations"] > 100, d


def c_events(tmp):
    text = ok(["-o", "send", "-e", "-n", "200", "-s", "64", "--verify"])
    assert "Test with events" in text and row(text, 64)[0] == 200, text
    assert jrun(["-o", "read", "--lat", "-e", "-n", "50", "--verify"])[0]["iterations"] == 50


def c_CPU_freq(tmp):
    ok(["-F", "-n", "10"])


def c_help(tmp):
    out = ok(["-h"], eal=False)
    assert out.startswith("usage: rnic-perf") and "--cq-mod" in out, out


def c_report_histogram(tmp):
    text = ok(["--lat", "-n", "50", "-H"])
    assert text.count("\n") > 50 and re.search(r"^50, [0-9.]+$", text, re.M), text


def c_ib_port(tmp):
    ok(["-i", "1", "-n", "10"])
    refused(["-i", "2"], needle="not supported")


def c_inline_size(tmp):
    assert "Max inline data : 64[B]" in ok(["-I", "64", "-s", "64", "-n", "100", "--verify"])


def c_post_list(tmp):
    d = jrun(["-l", "4", "-s", "64", "-n", "100", "--verify"])[0]
    assert d["post_list"] == 4 and d["cq_mod"] == 4 and d["iterations"] == 100, d
    refused(["-l", "3", "-n", "100"], needle="multiple")


def c_mtu(tmp):
    assert jrun(["-m", "1024", "-s", "4096", "-n", "100"])[0]["mtu"] == 1024
    refused(["-m", "1000"])


def c_iters(tmp):
    assert jrun(["-n", "123", "-q", "2", "-s", "64"])[0]["iterations"] == 246  # per QP, as perftest


def c_noPeak(tmp):
    assert jrun(["-N", "-n", "100", "-s", "64"])[0]["bw_peak_MBps"] == 0


def c_outs(tmp):
    assert "Outstand reads  : 4" in ok(["-o", "read", "-o", "4", "-n", "100", "-s", "64", "--verify"])


def c_port(tmp):
    crc, cout, src, sout = memif_pair(tmp, ["--json"], ["-s", "4096", "-n", "200", "--verify", "--json"])
    assert crc == 0 and src == 0, f"client {crc}, server {src}\n{cout}\n{sout}"
    c = json.loads(next(x for x in cout.splitlines() if x.startswith("{")))
    s = json.loads(next(x for x in sout.splitlines() if x.startswith("{")))
    assert c["iterations"] == s["iterations"] == 200 and c["verified"] and s["verified"], (c, s)


def c_qp(tmp):
    d = jrun(["-q", "3", "-n", "50", "-s", "64", "--verify"])[0]
    assert d["qps"] == 3 and d["iterations"] == 150, d


def c_cq_mod(tmp):
    d = jrun(["-Q", "10", "-n", "100", "-s", "64", "--verify"])[0]
    assert d["cq_mod"] == 10 and d["iterations"] == 100, d


def c_size(tmp):
    assert jrun(["-s", "1000", "-n", "10"])[0]["size"] == 1000


def c_sl(tmp):
    ok(["-S", "0", "-n", "10"])
    refused(["-S", "1"], needle="not supported")


def c_tx_depth(tmp):
    assert jrun(["-t", "16", "-n", "100", "-s", "64"])[0]["tx_depth"] == 16


def c_qp_timeout(tmp):
    ok(["-u", "10", "-n", "10"])
    refused(["-u", "32"])


def c_report_unsorted(tmp):
    text = ok(["--lat", "-n", "30", "-U"])
    assert re.search(r"^30, [0-9.]+$", text, re.M), text


def c_version(tmp):
    assert "softrnic" in ok(["-V"], eal=False)


def c_limit_bw(tmp):
    ok(["-w", "0.001", "-n", "100", "-s", "64"])
    refused(["-w", "1000000", "-n", "100", "-s", "64"], code=1, needle="below bw limit")


def c_gid_index(tmp):
    ok(["-x", "0", "-n", "10"])
    refused(["-x", "5", "-n", "10"], code=1, needle="no GID")


def c_vector(tmp):
    ok(["-X", "0", "-o", "send", "-e", "-n", "10"])
    refused(["-X", "1"], needle="not supported")


def c_limit_msgrate(tmp):
    refused(["-y", "1000000", "-n", "100", "-s", "64"], code=1, needle="below msg_rate limit")


def c_no_effect(tmp, flag):
    ok([flag, "-n", "10"])


def c_force_link(tmp):
    ok(["--force-link=Ethernet", "-n", "10"])
    refused(["--force-link=IB"], needle="not supported")


def c_latency_gap(tmp):
    d = jrun(["--lat", "-n", "50", "--latency_gap=1000"])[0]
    assert d["seconds"] >= 0.05, d  # 50 gaps of 1 ms


def c_out_json(tmp):
    path = os.path.join(tmp, "out.json")
    ok(["--out_json", f"--out_json_file={path}", "-s", "4096", "-n", "100"])
    r = json.load(open(path))
    assert r["results"]["MsgSize"] == 4096 and r["results"]["BW_average"] > 0, r
    assert r["test_info"]["test"] == "RDMA_Write_BW_Test" and r["test_info"]["Connection_type"] == "RC", r
    ok(["--out_json", f"--out_json_file={path}", "--lat", "-n", "100"])
    r = json.load(open(path))["results"]
    assert {"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9"} <= set(r), r


def c_output(tmp):
    out = ok(["--output=bandwidth", "-s", "4096", "-n", "100"])
    assert re.fullmatch(r"[0-9.]+\n", out), out
    assert re.fullmatch(r"[0-9.]+\n", ok(["--output=latency", "--lat", "-n", "100"]))


def c_pkey_index(tmp):
    ok(["--pkey_index=0", "-n", "10"])
    refused(["--pkey_index=1"], needle="not supported")


def c_report_both(tmp):
    text = ok(["-b", "--report-both", "-s", "1024", "-n", "100"])
    both, local, remote = row(text, 1024), *[row(part, 1024) for part in text.split("Local results:")[1]
                                                 .split("Remote results:")]
    assert both[0] == local[0] + remote[0] == 200, (both, local, remote)


def c_rate_limit(tmp):
    # 64 KB WRITEs held to 0.5 Gb/s of frames on the wire: the payload's rate just below it (headers: ~1.5 %);
    # without the limit the loopback pair runs several Gb/s.
    # The rate at least 0.6 of the limit per second the lcores could run.
    res, share = paced(["--rate_limit", "0.5", "-s", "65536", "-n", "200"])
    d = res[0]
    assert 0.3 * min(1, share) < d["bw_avg_Gbps"] < 0.55, (share, d)


def c_rate_units(tmp):
    res, share = paced(["--rate_limit", "50", "--rate_units", "M", "-s", "65536", "-n", "100"])
    d = res[0]
    assert 30 * min(1, share) < d["bw_avg_MBps"] < 55, (share, d)
    refused(["--rate_limit", "1000", "--rate_units", "p"], needle="packets/s")


def c_rate_limit_type(tmp):
    d = jrun(["--rate_limit", "0.5", "--rate_limit_type", "HW", "-s", "65536", "-n", "100"])[0]
    assert d["bw_avg_Gbps"] < 0.55, d
    refused(["--rate_limit", "1", "--rate_limit_type", "SW"], needle="HW only")


def c_tclass(tmp):
    ok(["--tclass", "106", "-s", "4096", "-n", "100", "--verify"])
    refused(["--tclass", "256"], needle="traffic class")


def c_report_gbits(tmp):
    assert "BW average[Gb/sec]" in ok(["--report_gbits", "-s", "4096", "-n", "100"])


def c_run_infinitely(tmp):
    p = subprocess.Popen([PERF, "--run_infinitely", "-D", "0.5", "-s", "64"] + EAL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(2)
    out, err = p.communicate(timeout=30)
    rows = re.findall(r"^ 64 +\d+ ", out, re.M)
    assert p.returncode == 0 and len(rows) >= 2, (p.returncode, out, err)
    # One stop that arrives twice (timeout(1) signals its command, then its process group): still one stop.
    # Taken for a second, aborting, SIGINT, it ended in "interrupted" (exit 1) 3 times of 3 on the loopback.
    p = subprocess.Popen([PERF, "--run_infinitely", "-D", "0.5", "-s", "64"] + EAL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(2)
    time.sleep(0.02)
    if p.poll() is None:
        p.send_signal(2)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and "interrupted" not in err, (p.returncode, out, err)
    refused(["--run_infinitely", "--lat"], needle="bandwidth tests only")


def c_wait_destroy(tmp):
    t0 = time.time()
    ok(["--wait_destroy=1", "-n", "10"])
    assert time.time() - t0 >= 1


CASES = {name[2:].replace("-", "_"): fn for name, fn in globals().items() if name.startswith("c_")}
CASES["out_json_file"] = c_out_json
for flag in ("disable_pcie_relaxed", "dont_xchg_versions", "use_old_post_send"):
    CASES[flag] = lambda tmp, f=flag: c_no_effect(tmp, "--" + f)


def table(doc):
    """(long name, takes a value, verdict) of each row of the option table."""
    rows = []
    for line in open(doc):
        m = re.match(r"^\| `([^`]+)` \|[^|]*\| \*\*([a-z ]+)\*\*", line)
        if not m:
            continue
        names = [n.strip() for n in m.group(1).split(",")]
        long = next(n for n in names if n.startswith("--"))
        rows.append((long.split("=")[0][2:], "=" in long, m.group(2)))
    return rows


def check_errors():
    """Every failure says why: usage errors exit 2, failed runs 1."""
    refused(["--frobnicate"], needle="unknown option")
    refused(["-s", "0"], needle="1 .. 8388608")
    refused(["--size"], needle="missing value")
    refused(["-o", "read", "-c", "UC"], needle="need -c RC")
    refused(["--server", "somehost"], needle="takes no HOST")
    refused(["--client", "somehost:18515"], needle="the HOST argument")
    refused(["-q", "2000", "somehost"], needle="between two processes")
    refused(["--hist-out", "/nonexistent/dir/x.json", "-n", "10"], code=1, needle="--hist-out")
    refused(["--out_json", "--out_json_file=/nonexistent/dir/x.json", "-n", "10"], code=1, needle="--out_json_file")
    refused(["--stages", "nonsense", "-n", "10"], needle="the engine did not start")
    # --cc-ab switches both devices: loopback, bandwidth, one -D run, its turns bounded
    refused(["--cc-ab", "100", "-n", "10"], needle="needs -D")
    refused(["--cc-ab", "100", "--lat", "-D", "1"], needle="bandwidth tests only")
    refused(["--cc-ab", "100", "-D", "1", "somehost"], needle="in loopback only")
    refused(["--cc-ab", "10", "-D", "100"], needle="4096 turns")
    refused(["--cc-ab", "5", "-D", "1"], needle="10 .. 10000")
    d = jrun(["--cc-ab", "50", "-D", "0.6", "-s", "64"])[-1]["cc_ab"]
    assert d["turn_ms"] == 50 and 9 <= d["turns"] <= 12 and d["pairs"] >= 3, d
    assert d["on_Mpps"] > 0 and d["off_Mpps"] > 0 and d["ratio_min"] <= d["ratio"] <= d["ratio_max"], d
    assert 0.5 < d["measured"] <= 1, d
    check_op_ab()
    check_qp_ab()
    # A WRITE ping that never lands (the receiver drops every frame): the sender's retries run out, and the
    # waiting side says so instead of only that nothing came.
    refused(["--lat", "-n", "10", "-u", "10", "--fault", "port=1,drop=1"], code=1, needle="retry counter exceeded")
    assert "--port NAME" in ok(["--help-engine"], eal=False)
    ok(["--config", os.path.join(SRC, "config", "softrnic.conf"), "-n", "10"])


def check_op_ab():
    """--op-ab OP:MS: -o's op and OP in turns of one -D run in loopback, the same refusals as --cc-ab's and its
    own; SEND's turns find their receives (RC: every SEND received, none lost)."""
    for args, needle in ((["-n", "10"], "needs -D"), (["--lat", "-D", "1"], "bandwidth tests only"),
                         (["-D", "1", "somehost"], "in loopback only"), (["-D", "100"], "4096 turns"),
                         (["-D", "1", "-a"], "needs -D"), (["-D", "1", "-b"], "not with -b"),
                         (["-D", "1", "--verify"], "--verify"), (["-D", "1", "-c", "UC"], "READ needs -c RC"),
                         (["-D", "1", "--cc-ab", "20"], "one setting in turns")):
        refused(["--op-ab", "read:20"] + args, needle=needle)
    refused(["--op-ab", "fetch_add:20", "-D", "1"], needle="write, read and send only")
    refused(["-A", "FETCH_AND_ADD", "--op-ab", "write:20", "-D", "1"], needle="write, read and send only")
    refused(["-o", "send", "-c", "UD", "-s", "64", "--op-ab", "write:20", "-D", "1"], needle="UD carries SEND only")
    for bad in ("read:5", "read", "bogus:20", "read:20x", ":20"):
        refused(["--op-ab", bad, "-D", "1"], needle="OP:MS")
    for op in ("read", "send"):
        r = jrun(["-o", "write", "-s", "64", "-t", "128", "--op-ab", f"{op}:50", "-D", "0.6"])[-1]
        d = r["op_ab"]
        assert (d["a"], d["b"], d["turn_ms"]) == ("write", op, 50) and 9 <= d["turns"] <= 12, d
        assert d["pairs"] >= 3 and d["a_Mpps"] > 0 and d["b_Mpps"] > 0, d
        assert d["ratio_min"] <= d["ratio"] <= d["ratio_max"] and 0.5 < d["measured"] <= 1, d
        assert r["lost"] == 0 and r["op"] == "write", r


def check_qp_ab():
    """--qp-ab N:T:MS: every QP (-t deep) and the first N (T deep) in turns of one -D run in loopback, the same
    refusals as --op-ab's and its own; the first N QPs' slots and SQs sized for T, every message verified in
    both kinds of turn, and with one signaled send in 8 (-Q) a QP leaving its turn still completes its last ones."""
    for args, needle in ((["-n", "10"], "needs -D"), (["--lat", "-D", "1"], "bandwidth tests only"),
                         (["-D", "1", "somehost"], "in loopback only"), (["-D", "100"], "4096 turns"),
                         (["-D", "1", "-b"], "not with -b"),
                         (["-D", "1", "--op-ab", "read:20"], "one setting in turns"),
                         (["-D", "1", "--cc-ab", "20"], "one setting in turns")):
        refused(["-q", "4", "-t", "16", "--qp-ab", "1:64:20"] + args, needle=needle)
    refused(["-q", "4", "-D", "1", "--qp-ab", "4:128:20"], needle="N must be below -q")
    refused(["-q", "4", "-t", "64", "-D", "1", "--qp-ab", "1:32:20"], needle="T below -t")
    for bad in ("1:64", "0:64:20", "1:0:20", "1:5000:20", "1:64:5", "1::20", "1:64:20:3", "x:64:20"):
        refused(["-q", "4", "--qp-ab", bad, "-D", "1"], needle="N:T:MS")
    for op, extra in (("write", ["--verify"]), ("send", ["--verify"]), ("read", ["--verify"]), ("write", [])):
        r = jrun(["-o", op, "-s", "64", "-q", "16", "-t", "8", "--qp-ab", "2:64:50", "-D", "0.6"] + extra)[-1]
        d = r["qp_ab"]
        assert (d["b"], d["a"], d["b_qps"], d["b_depth"], d["a_qps"], d["a_depth"]) == \
            ("16 QPs", "2 QPs", 16, 8, 2, 64) and d["turn_ms"] == 50 and 9 <= d["turns"] <= 12, d
        assert d["pairs"] >= 3 and d["a_Mpps"] > 0 and d["b_Mpps"] > 0, d
        assert d["ratio_min"] <= d["ratio"] <= d["ratio_max"] and 0.5 < d["measured"] <= 1, d
        assert r["lost"] == 0 and r["verified"] == bool(extra) and r["cq_mod"] == 8, r
    out = ok(["-o", "write", "-s", "64", "-q", "16", "-t", "8", "--qp-ab", "2:64:50", "-D", "0.3"])
    assert "the first 2 QPs 64 deep in their turns" in out and "16 QPs and 2 QPs in" in out, out


def check_names():
    """perftest's names: the test from the name; --loopback since without HOST they are the server."""
    for name, want in (("rnic_write_lat", ("write", "lat", 2)), ("rnic_read_bw", ("read", "bw", 65536)),
                       ("rnic_send_lat", ("send", "lat", 2)), ("rnic_atomic_bw", ("fetch_add", "bw", 8))):
        rc, out, err = run(["--loopback", "-n", "20", "--json", "--verify"], perf=os.path.join(NAMES, name))
        d = json.loads(out.splitlines()[-1])
        assert rc == 0 and (d["op"], d["mode"], d["size"]) == want and d["verified"], (name, rc, out, err)


def main():
    global PERF, NAMES, SRC
    PERF, SRC = sys.argv[1], sys.argv[2]
    doc = os.path.join(SRC, "doc", "perftest.md")
    NAMES = os.path.dirname(os.path.abspath(PERF))
    rows = table(doc)
    assert len(rows) > 80, f"{doc}: {len(rows)} rows"
    done = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, has_value, verdict in rows:
            if verdict == "not supported":
                refused([f"--{name}=1" if has_value else f"--{name}"], needle="not supported")
            else:
                fn = CASES.get(name.replace("-", "_"))
                assert fn is not None, f"--{name}: the table says '{verdict}' and nothing here checks it"
                fn(tmp)
            done += 1
        check_errors()
        check_names()
    print(f"{done} perftest options checked against {doc}")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
