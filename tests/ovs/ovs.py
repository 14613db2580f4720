#!/usr/bin/python3
"""rnicd beside Open vSwitch with DPDK (issue 23, doc/deploy.md): two rnicd instances, each on a
dpdkvhostuserclient port of one OVS-DPDK bridge (net_virtio_user in rnicd, its socket's server), with two
tenants each: tenant A (processes of primary group 100) sends only from GID 1, tenant B (group 65534) only
from GID 2 (`tenant gid=N gids I`), so that OpenFlow rules tell them apart by IP address.
    ovs.py RNICD RNIC_PERF
  1. both tenants at once: verified RC WRITE, READ and SEND (rnic-perf --verify) from rnicd 0 to rnicd 1;
  2. tenant B naming tenant A's GID index is refused: an RC QP by rnicd (its QP never leaves INIT), a UD
     SEND by the engine;
  3. OVS's counters of rnicd 0's port (Interface statistics) equal its ethdev's (/ethdev/stats), and each
     tenant's flow (nw_src its GID) counted exactly the request packets rnicd counted for that tenant;
  4. an OpenFlow rule dropping tenant A's GID stops exactly tenant A: its QP ends in RETRY_EXC_ERR, tenant
     B's verified WRITEs go on through the rule and finish.
The test starts its own ovsdb-server and ovs-vswitchd-dpdk (run, database and log directories in a
temporary directory, never the system's), on no hugepages (dpdk-extra --no-huge --legacy-mem: without
--legacy-mem OVS adds --in-memory, which --no-huge refuses), and stops everything it started. Exit 77 with
the reason where OVS-DPDK is not installed or does not initialise.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import telemetry  # noqa: E402

RNICD, PERF = sys.argv[1], sys.argv[2]
VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
TIMEOUT = 30
TENANTS = {"A": {"group": 100, "gid_index": 1, "tcp": 18700}, "B": {"group": 65534, "gid_index": 2, "tcp": 18710}}


def ip(host, gid_index):
    """rnicd `host`'s address of GID index `gid_index` (10.23.<index>.<host + 1>)."""
    return f"10.23.{gid_index}.{host + 1}"


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


class Procs:
    """Every process the test starts, each ended (SIGTERM, then SIGKILL) at the end whatever happened."""

    def __init__(self, tmp):
        self.tmp, self.all = tmp, []

    def start(self, name, cmd, env=None):
        log = open(os.path.join(self.tmp, name + ".log"), "w+")
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        p.name, p.log = name, log
        self.all.append(p)
        return p

    @staticmethod
    def output(p):
        p.log.flush()
        with open(p.log.name) as f:
            return f.read()

    def finish(self, p, timeout=TIMEOUT):
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError(f"{p.name} did not end in {timeout} s:\n{self.output(p)}")
        return p.returncode

    def stop_all(self):
        for p in reversed(self.all):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


class Ovs:
    """A private OVS: ovsdb-server and ovs-vswitchd-dpdk in the foreground under Procs."""

    def __init__(self, procs, tmp):
        self.procs, self.dir = procs, os.path.join(tmp, "ovs")
        os.mkdir(self.dir)
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_DBDIR=self.dir, OVS_LOGDIR=self.dir,
                        OVS_SYSCONFDIR=self.dir)
        self.db = f"unix:{self.dir}/db.sock"
        self.ctl = f"{self.dir}/vswitchd.ctl"
        self.prefix = f"ovs-test-{os.getpid()}"

    def run(self, *cmd, check=True):
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=TIMEOUT)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
        return r.stdout.strip()

    def vsctl(self, *args):
        return self.run("ovs-vsctl", f"--db={self.db}", "--timeout=20", *args)

    def ofctl(self, *args):
        return self.run("ovs-ofctl", *args)

    def start(self):
        self.run("ovsdb-tool", "create", f"{self.dir}/conf.db", SCHEMA)
        self.server = self.procs.start("ovsdb-server", [
            "ovsdb-server", f"{self.dir}/conf.db", f"--remote=punix:{self.dir}/db.sock",
            f"--pidfile={self.dir}/ovsdb-server.pid", f"--unixctl={self.dir}/ovsdb-server.ctl"], env=self.env)
        deadline = time.time() + TIMEOUT
        while not os.path.exists(f"{self.dir}/db.sock"):
            assert self.server.poll() is None, f"ovsdb-server exited:\n{Procs.output(self.server)}"
            assert time.time() < deadline, "ovsdb-server did not open its socket"
            time.sleep(0.05)
        self.vsctl("--no-wait", "init")
        # DPDK's main thread on CPU 0 and the PMD thread on CPU 1, sleeping up to 500 us when idle (the
        # machine's 2 cores are shared with the two rnicd); no hugepages.
        self.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
                   f"other_config:dpdk-extra=--no-huge --legacy-mem -m 512 --no-pci --file-prefix {self.prefix}",
                   "other_config:dpdk-lcore-mask=0x1", "other_config:pmd-cpu-mask=0x2",
                   "other_config:pmd-maxsleep=500")
        self.vswitchd = self.procs.start("ovs-vswitchd", [
            VSWITCHD, self.db, f"--pidfile={self.dir}/ovs-vswitchd.pid", f"--unixctl={self.ctl}",
            f"--log-file={self.dir}/ovs-vswitchd.log"], env=self.env)
        deadline = time.time() + TIMEOUT
        while True:
            if self.vswitchd.poll() is not None:
                skip(f"ovs-vswitchd-dpdk does not start here (exit {self.vswitchd.returncode}): "
                     f"{Procs.output(self.vswitchd)[-800:]}")
            if self.run("ovs-vsctl", f"--db={self.db}", "--timeout=5", "get", "Open_vSwitch", ".",
                        "dpdk_initialized", check=False) == "true":
                break
            if time.time() > deadline:
                skip(f"OVS's DPDK did not initialise in {TIMEOUT} s: {Procs.output(self.vswitchd)[-800:]}")
            time.sleep(0.2)

    def stats(self, port):
        """An Interface's statistics column as a dict of numbers."""
        text = self.vsctl("get", "Interface", port, "statistics").strip("{}")
        return {k.strip(): int(v) for k, v in (kv.split("=") for kv in text.split(", "))}

    def flow_packets(self, match):
        """n_packets of the bridge's flows whose match includes `match`."""
        n = 0
        for line in self.ofctl("dump-flows", "br0").splitlines():
            if match in line:
                n += int(line.split("n_packets=")[1].split(",")[0])
        return n


def tenant_stats(rnicd):
    """/rnicd/tenants of a daemon by tenant name ("gid 100")."""
    return {t["tenant"]: t for t in telemetry.query(rnicd.prefix, "/rnicd/tenants").values()}


class Rnicd:
    def __init__(self, procs, tmp, host):
        self.host = host
        self.sock = os.path.join(tmp, f"rnicd{host}.sock")
        self.vhost = os.path.join(tmp, f"vhu{host}.sock")
        self.prefix = f"rnicd-ovs-{os.getpid()}-{host}"
        gids = ",".join(ip(host, i) for i in range(3))
        tenants = [a for t in TENANTS.values() for a in ("--tenant", f"gid={t['group']} gids {t['gid_index']}")]
        self.proc = procs.start(f"rnicd{host}", [
            RNICD, "--socket", self.sock, *tenants, "--",
            "-l", "0,1", "--no-huge", "-m", "512", "--no-pci", "--file-prefix", self.prefix,
            "--log-level=lib.eal:warning",
            f"--vdev=net_virtio_user0,path={self.vhost},server=1,queues=2,mac=02:00:00:23:00:0{host}",
            "--", "--port", "net_virtio_user0", "--ip", gids, "--idle-sleep", "100"])

    def wait_serving(self):
        deadline = time.time() + TIMEOUT
        while "serving on" not in Procs.output(self.proc):
            assert self.proc.poll() is None, f"rnicd exited at start:\n{Procs.output(self.proc)}"
            assert time.time() < deadline, f"rnicd did not start:\n{Procs.output(self.proc)}"
            time.sleep(0.1)


def tenant_cmd(tenant, rnicd, args, gid_index=None):
    """rnic-perf as a process of the tenant (its primary group; root still, to run the build), a client of
    rnicd, pinned to CPU 0 (the daemons' main lcore: CPU 1 has their workers and OVS's PMD)."""
    t = TENANTS[tenant]
    x = t["gid_index"] if gid_index is None else gid_index
    return (["setpriv", f"--regid={t['group']}", "--clear-groups", "taskset", "-c", "0", PERF,
             "-x", str(x), "-p", str(t["tcp"]), *args],
            dict(os.environ, RNIC_DAEMON=rnicd.sock))


def pair(procs, tenant, name, args, client_args=(), gid_index=None, server_gid_index=None):
    """A tenant's rnic-perf server on rnicd 1 and its client on rnicd 0; returns (server, client)."""
    cmd, env = tenant_cmd(tenant, R[1], ["--server", *args], server_gid_index)
    server = procs.start(f"{name}-{tenant}-server", cmd, env)
    time.sleep(0.5)
    cmd, env = tenant_cmd(tenant, R[0], [*args, *client_args, "127.0.0.1"], gid_index)
    client = procs.start(f"{name}-{tenant}-client", cmd, env)
    return server, client


def expect_ok(procs, *ps):
    for p in ps:
        assert procs.finish(p, 60) == 0, f"{p.name} failed:\n{Procs.output(p)}"


def verified_ops(procs):
    for op, size in (("write", 65536), ("read", 65536), ("send", 4096)):
        runs = [pair(procs, t, op, ["-o", op, "-s", str(size), "-n", "300", "--verify"]) for t in TENANTS]
        expect_ok(procs, *(p for r in runs for p in r))
    print("both tenants: 300 verified RC WRITE 64 KB, READ 64 KB and SEND 4 KB each, rnicd 0 -> rnicd 1 "
          "through OVS")


def foreign_gid_refused(procs):
    """Tenant B naming tenant A's GID index: an RC QP's address vector is refused at MODIFY_QP (EPERM), a UD
    SEND's (its address handle is the client's own) fails in the engine: the WQE completes in error."""
    server, client = pair(procs, "B", "foreign-rc", ["-o", "write", "-s", "4096", "-n", "10"], gid_index=1)
    rc = procs.finish(client)
    out = Procs.output(client)
    assert rc != 0 and "Operation not permitted" in out, f"tenant B sent from tenant A's GID: exit {rc}\n{out}"
    procs.finish(server)
    assert tenant_stats(R[0])["gid 65534"]["gid_refused"] >= 1, tenant_stats(R[0])
    server, client = pair(procs, "B", "foreign-ud", ["-c", "UD", "-o", "send", "-s", "256", "-n", "10"],
                          gid_index=1)
    rc = procs.finish(client)
    out = Procs.output(client)
    assert rc != 0 and "local QP operation error" in out, f"tenant B's UD from tenant A's GID: exit {rc}\n{out}"
    procs.finish(server)
    print("tenant B naming GID index 1 (tenant A's): RC refused by rnicd (EPERM, counted in /rnicd/tenants), "
          "a UD SEND failed by the engine (local QP operation error)")


def counters_match(ovs, before):
    """OVS's counters of vhu0 against rnicd 0's: its port's (ethdev) and its device's (/rnic/stats); each
    tenant's flow against rnicd's count of the tenant's request packets."""
    time.sleep(1)		# nothing in flight: the ACKs and the last ARP exchanges are through
    o = ovs.stats("vhu0")
    e = telemetry.query(R[0].prefix, "/ethdev/stats,0")
    d = telemetry.query(R[0].prefix, "/rnic/stats,0")["rnic0"]
    ours = (o["rx_packets"], o["rx_bytes"], o["tx_packets"], o["tx_bytes"])
    assert ours == (e["opackets"], e["obytes"], e["ipackets"], e["ibytes"]) == \
        (d["tx_packets"], d["tx_bytes"], d["rx_packets"], d["rx_bytes"]), f"OVS vhu0 {o}\nethdev {e}\nrnic0 {d}"
    print(f"OVS vhu0 rx {ours[0]} packets {ours[1]} bytes, tx {ours[2]} packets {ours[3]} bytes = rnicd 0's "
          f"port and device (tx and rx); OVS could not hand {o['tx_dropped']} to rnicd 0 (its RX ring "
          f"full; rnicd 0 retransmitted {d['retransmits']})")
    tenants = tenant_stats(R[0])
    extra = 0
    for name, t in TENANTS.items():
        flow = ovs.flow_packets(f"nw_src={ip(0, t['gid_index'])}") - before[name]
        engine = tenants[f"gid {t['group']}"]["packets"]
        # The tenant's count has its request packets; a READ asked again for responses that did not come
        # is a retransmit the device counts, not the tenant.
        assert flow >= engine, f"tenant {name}: OVS flow counted {flow} packets, rnicd {engine}"
        extra += flow - engine
        print(f"tenant {name}: OVS flow nw_src={ip(0, t['gid_index'])} {flow} packets, rnicd 0's count of "
              f"the tenant's requests {engine}")
    assert extra <= d["retransmits"], f"the tenants' flows counted {extra} packets more than rnicd, " \
        f"which retransmitted {d['retransmits']}"


def drop_one_tenant(ovs, procs):
    a = pair(procs, "A", "drop", ["-o", "write", "-s", "65536", "-D", "6", "--verify"], ["-u", "10"])
    b = pair(procs, "B", "drop", ["-o", "write", "-s", "65536", "-D", "6", "--verify"])
    time.sleep(3)
    b_before = ovs.flow_packets(f"nw_src={ip(0, TENANTS['B']['gid_index'])}")
    ovs.ofctl("add-flow", "br0", f"priority=200,ip,nw_src={ip(0, TENANTS['A']['gid_index'])},actions=drop")
    rc = procs.finish(a[1], 60)
    out = Procs.output(a[1])
    assert rc == 1 and "transport retry counter exceeded" in out, f"tenant A's client: exit {rc}\n{out}"
    procs.finish(a[0], 60)		# its server sees the peer go
    expect_ok(procs, *b)
    dropped = ovs.flow_packets("actions=drop")
    b_after = ovs.flow_packets(f"nw_src={ip(0, TENANTS['B']['gid_index'])}")
    assert dropped > 0 and b_after > b_before, f"dropped {dropped}, tenant B {b_before} -> {b_after}"
    print(f"drop rule on {ip(0, TENANTS['A']['gid_index'])}: {dropped} packets dropped, tenant A's QP in "
          f"RETRY_EXC_ERR; tenant B sent {b_after - b_before} packets after it and verified every WRITE")


def main():
    global R
    for tool in ("ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "setpriv", "taskset"):
        if shutil.which(tool) is None:
            skip(f"{tool} is not installed (Debian package openvswitch-switch-dpdk)")
    if not os.access(VSWITCHD, os.X_OK) or not os.path.exists(SCHEMA):
        skip(f"{VSWITCHD} is not installed (Debian package openvswitch-switch-dpdk)")
    if os.geteuid() != 0:
        skip("needs root (DPDK, and tenants of other groups)")
    tmp = tempfile.mkdtemp(prefix="rnicd-ovs-")
    procs = Procs(tmp)
    try:
        ovs = Ovs(procs, tmp)
        ovs.start()
        ovs.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
        R = [Rnicd(procs, tmp, h) for h in (0, 1)]
        for r in R:
            # OVS is the vhost-user client: it connects (and reconnects) to the socket rnicd serves.
            ovs.vsctl("add-port", "br0", f"vhu{r.host}", "--", "set", "Interface", f"vhu{r.host}",
                      "type=dpdkvhostuserclient", f"options:vhost-server-path={r.vhost}", "mtu_request=9000")
        for r in R:
            r.wait_serving()
        # one flow per tenant GID of rnicd 0 (the switch counts each tenant), the rest NORMAL
        for t in TENANTS.values():
            ovs.ofctl("add-flow", "br0", f"priority=100,ip,nw_src={ip(0, t['gid_index'])},actions=NORMAL")
        before = {n: ovs.flow_packets(f"nw_src={ip(0, t['gid_index'])}") for n, t in TENANTS.items()}
        verified_ops(procs)
        foreign_gid_refused(procs)
        counters_match(ovs, before)
        drop_one_tenant(ovs, procs)
        for r in R:
            r.proc.terminate()
            assert procs.finish(r.proc) == 0, f"rnicd {r.host} did not exit 0:\n{Procs.output(r.proc)}"
        print("1 passed, 0 failed")
    except AssertionError as e:
        print(f"FAIL: {e}")
        for p in procs.all:
            if p.name.startswith(("rnicd", "ovs-vswitchd")):
                print(f"--- {p.name}, last lines:\n{Procs.output(p)[-1500:]}")
        sys.exit(1)
    finally:
        procs.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
        # the DPDK runtime directories (meson's test setup has them in a tmpfs of the test's own anyway)
        for prefix in [f"ovs-test-{os.getpid()}"] + [f"rnicd-ovs-{os.getpid()}-{h}" for h in (0, 1)]:
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)


if __name__ == "__main__":
    main()
