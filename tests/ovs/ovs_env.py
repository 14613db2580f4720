"""What the OVS-DPDK tests (tests/ovs: ovs.py, ovs_vm.py) share: their processes, a private OVS-DPDK
(ovsdb-server and ovs-vswitchd-dpdk, run, database and log directories in the test's temporary directory,
never the system's, on no hugepages), rnicd on a dpdkvhostuserclient port, the two tenants and their
addresses, and the checks of OVS's counters against softrnic's."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import telemetry  # noqa: E402

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
        """A port's counters now (OpenFlow port statistics, read from the netdev when asked: the Interface's
        statistics column lags by up to stats-update-interval, 5 s at least), as rx_packets, rx_bytes,
        rx_dropped, tx_packets, tx_bytes, tx_dropped."""
        out = self.ofctl("dump-ports", "br0", port)
        stats = {}
        for direction in ("rx", "tx"):
            fields = out.split(f"{direction} pkts=")[1].split("\n")[0]
            values = dict(kv.strip().split("=") for kv in f"pkts={fields}".split(","))
            for ours, theirs in (("packets", "pkts"), ("bytes", "bytes"), ("dropped", "drop")):
                stats[f"{direction}_{ours}"] = int(values[theirs])
        return stats

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
    """rnicd `host` (0, 1) with both tenants, on net_virtio_user (the server of its socket, vhu<host>.sock)."""

    def __init__(self, procs, tmp, host, binary):
        self.host = host
        self.sock = os.path.join(tmp, f"rnicd{host}.sock")
        self.vhost = os.path.join(tmp, f"vhu{host}.sock")
        self.prefix = f"rnicd-ovs-{os.getpid()}-{host}"
        gids = ",".join(ip(host, i) for i in range(3))
        tenants = [a for t in TENANTS.values() for a in ("--tenant", f"gid={t['group']} gids {t['gid_index']}")]
        self.proc = procs.start(f"rnicd{host}", [
            binary, "--socket", self.sock, *tenants, "--",
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



def check_ovs_installed():
    """Skips (77) where OVS-DPDK or the tools the tests need are missing, or without root."""
    for tool in ("ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "setpriv", "taskset"):
        if shutil.which(tool) is None:
            skip(f"{tool} is not installed (Debian package openvswitch-switch-dpdk)")
    if not os.access(VSWITCHD, os.X_OK) or not os.path.exists(SCHEMA):
        skip(f"{VSWITCHD} is not installed (Debian package openvswitch-switch-dpdk)")
    if os.geteuid() != 0:
        skip("needs root (DPDK, and tenants of other groups)")


def start_bridge(procs, tmp, rnicd):
    """A private OVS-DPDK with the bridge br0 and rnicd 0 and 1 on ports vhu0 and vhu1, serving; returns
    (ovs, [rnicd 0, rnicd 1])."""
    ovs = Ovs(procs, tmp)
    ovs.start()
    ovs.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
    daemons = [Rnicd(procs, tmp, h, rnicd) for h in (0, 1)]
    for r in daemons:
        # OVS is the vhost-user client: it connects (and reconnects) to the socket rnicd serves.
        ovs.vsctl("add-port", "br0", f"vhu{r.host}", "--", "set", "Interface", f"vhu{r.host}",
                  "type=dpdkvhostuserclient", f"options:vhost-server-path={r.vhost}", "mtu_request=9000")
    for r in daemons:
        r.wait_serving()
    return ovs, daemons


def port_counters_match(ovs, rnicd):
    """OVS's counters of rnicd's port vhu<host> equal its ethdev's (/ethdev/stats) and its device's
    (/rnic/stats), each way; returns the device's counters. Call it with nothing in flight."""
    o = ovs.stats(f"vhu{rnicd.host}")
    e = telemetry.query(rnicd.prefix, "/ethdev/stats,0")
    d = telemetry.query(rnicd.prefix, "/rnic/stats,0")["rnic0"]
    ours = (o["rx_packets"], o["rx_bytes"], o["tx_packets"], o["tx_bytes"])
    assert ours == (e["opackets"], e["obytes"], e["ipackets"], e["ibytes"]) == \
        (d["tx_packets"], d["tx_bytes"], d["rx_packets"], d["rx_bytes"]), \
        f"OVS vhu{rnicd.host} {o}\nethdev {e}\nrnic0 {d}"
    print(f"OVS vhu{rnicd.host} rx {ours[0]} packets {ours[1]} bytes, tx {ours[2]} packets {ours[3]} bytes = "
          f"rnicd {rnicd.host}'s port and device (tx and rx); OVS could not hand {o['tx_dropped']} to it (its "
          f"RX ring full; rnicd {rnicd.host} retransmitted {d['retransmits']})")
    return d


def add_tenant_flows(ovs, hosts):
    """One flow per tenant GID of each rnicd in `hosts` (the switch counts each tenant), the rest NORMAL;
    returns what each flow counted so far, by host and tenant name."""
    for h in hosts:
        for t in TENANTS.values():
            ovs.ofctl("add-flow", "br0", f"priority=100,ip,nw_src={ip(h, t['gid_index'])},actions=NORMAL")
    return {h: {n: ovs.flow_packets(f"nw_src={ip(h, t['gid_index'])}") for n, t in TENANTS.items()}
            for h in hosts}


def tenant_flows_match(ovs, rnicd, before, retransmits=None):
    """Each tenant's flow (add_tenant_flows) against rnicd's count of the tenant's request packets
    (/rnicd/tenants), `before` what the flows had counted when the tenants began. The flows count what
    leaves the tenant's GID: with `retransmits` (a daemon that only requested) at most that many packets
    more than the requests; without (one that also answered: ACKs and READ responses, which the tenant's
    count leaves out), at least the requests."""
    tenants = tenant_stats(rnicd)
    extra = 0
    h = rnicd.host
    for name, t in TENANTS.items():
        flow = ovs.flow_packets(f"nw_src={ip(h, t['gid_index'])}") - before[name]
        engine = tenants[f"gid {t['group']}"]["packets"]
        # The tenant's count has its request packets; a READ asked again for responses that did not come
        # is a retransmit the device counts, not the tenant.
        assert engine > 0 and flow >= engine, f"tenant {name}: OVS flow counted {flow} packets, rnicd {h} {engine}"
        extra += flow - engine
        print(f"tenant {name}: OVS flow nw_src={ip(h, t['gid_index'])} {flow} packets, rnicd {h}'s count of "
              f"the tenant's requests {engine}")
    assert retransmits is None or extra <= retransmits, \
        f"the tenants' flows counted {extra} packets more than rnicd {h}, which retransmitted {retransmits}"


def run_test(body, teardown=None):
    """The frame of a test: body(procs, tmp) runs it in a temporary directory and returns the rnicd it
    started, each of which must then exit 0 on SIGTERM; a failed assertion prints the daemons' and OVS's
    last lines and exits 1. Whatever happens, every process ends, the temporary directory and the DPDK
    runtime directories (meson's test setup has them in a tmpfs of the test's own anyway) go, and then
    teardown() runs."""
    tmp = tempfile.mkdtemp(prefix="rnicd-ovs-")
    procs = Procs(tmp)
    try:
        for r in body(procs, tmp):
            r.proc.terminate()
            assert procs.finish(r.proc) == 0, f"rnicd {r.host} did not exit 0:\n{Procs.output(r.proc)}"
        print("1 passed, 0 failed")
    except AssertionError as e:
        print(f"FAIL: {e}")
        for p in procs.all:
            if p.name.startswith(("rnicd", "ovs-vswitchd", "qemu")):
                print(f"--- {p.name}, last lines:\n{Procs.output(p)[-1500:]}")
        sys.exit(1)
    finally:
        procs.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
        for prefix in [f"ovs-test-{os.getpid()}"] + [f"rnicd-ovs-{os.getpid()}-{h}" for h in (0, 1)]:
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
        if teardown is not None:
            teardown()
