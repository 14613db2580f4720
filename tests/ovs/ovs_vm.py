#!/usr/bin/python3
"""rnicd and a kernel RNIC on one Open vSwitch bridge (issue 23, doc/deploy.md): the two rnicd of ovs.py
(each on a dpdkvhostuserclient port, tenants A and B on GIDs of their own) and the interop suite's Linux
Soft-RoCE guest (tests/interop: Debian 12, rdma_rxe) under qemu on a third dpdkvhostuserclient port of the
same OVS-DPDK bridge: qemu's vhost-user netdev, the socket's server, its guest memory a shared memfd
(memory-backend-memfd,share=on, as vhost-user needs it; OVS maps it with no hugepages of its own).
    ovs_vm.py RNICD RNIC_VERBS_CHECK GUEST_VERBS_CHECK
  1. verbs-check (tests/interop/verbs_check.c: RC WRITE, WRITE and SEND with immediate, READ, FETCH_ADD,
     CMP_SWAP, each end acting in turn, every byte checked on both ends) between the guest's rxe0 and a
     tenant process of rnicd (rnic-verbs-check, a client of rnicd: RNIC_DAEMON): tenant A on rnicd 0 as
     client and on rnicd 1 as server, tenant B on rnicd 0 as server and on rnicd 1 as client, each from its
     own GID;
  2. OVS's counters of both rnicd's ports equal their ports' and devices' exactly, each tenant's flow
     counted at least the request packets rnicd counted for it, and OVS's counters of the guest's port lie
     between two readings of the guest's interface counters;
  3. an OpenFlow rule dropping tenant A's GID of rnicd 0: tenant A's verbs-check against the guest ends in
     RETRY_EXC_ERR, tenant B's on the same daemon passes under the rule.
The guest image comes from SOFTRNIC_VM_IMAGE (scripts/interop.sh sets it to its cached image); the TCP
exchanges of verbs-check go over a second interface of the guest, a tap in a network namespace of the
test's own, where the tenant processes run (their RoCE goes through OVS only). Exit 77 with the reason where
OVS-DPDK, qemu or the image is missing, or OVS-DPDK or the guest does not start.
"""
import os
import shutil
import subprocess
import sys
import time

from ovs_env import (TENANTS, TIMEOUT, Procs, add_tenant_flows, check_ovs_installed, ip, port_counters_match,
                     run_test, skip, start_bridge, tenant_flows_match)

RNICD, VERBS_CHECK, GUEST_VERBS_CHECK = sys.argv[1:4]
AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop", "guest", "agent.sh")
NS = f"rnic-ovsvm-{os.getpid()}"
GUEST_IP, GUEST_MAC = "10.23.0.100", "52:54:00:23:00:64"
# The TCP exchanges: the tap in NS and the guest's second interface.
CTRL_HOST, CTRL_GUEST, CTRL_MAC = "10.99.23.1", "10.99.23.2", "52:54:00:23:01:64"
BOOT_S = 150		# the guest under TCG: 11-90 s to rxe0 ACTIVE on this machine, by its load
# verbs-check's arguments on both ends: 4 rounds of 64 KB at path MTU 4096 (every link at MTU 9000)
VERBS_ARGS = ["-m", "4096", "-s", "65536", "-n", "4", "-T", "20"]


def run(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, timeout=TIMEOUT)


class Guest:
    """The interop suite's guest and its agent (tests/interop/guest/agent.sh): the share holds the agent, its
    configuration and the jobs the host gives it (NAME.sh in, NAME.out and NAME.rc out)."""

    def __init__(self, procs, tmp, image):
        self.procs, self.image, self.seq = procs, image, 0
        self.share = os.path.join(tmp, "share")
        self.jobs = os.path.join(self.share, "jobs")
        os.makedirs(self.jobs)
        os.makedirs(os.path.join(self.share, "bin"))
        shutil.copy(AGENT, self.share)
        shutil.copy(GUEST_VERBS_CHECK, os.path.join(self.share, "bin", "verbs-check"))
        with open(os.path.join(self.share, "guest.conf"), "w") as f:
            f.write(f"GUEST_ADDR={GUEST_IP}/16\nGUEST_MTU=9000\nGUEST_MAC={GUEST_MAC}\n"
                    f"GUEST_CTRL_MAC={CTRL_MAC}\nGUEST_CTRL_ADDR={CTRL_GUEST}/24\nJOB_TIMEOUT=120\n")
        self.console = os.path.join(tmp, "console.log")

    def boot(self, vhost):
        """qemu (TCG) in NS, serving the vhost-user socket `vhost`; waits for the agent's report. Skips
        where qemu ends at once (it cannot run here); fails where the guest came up without Soft-RoCE."""
        i = self.image
        self.started = time.time()
        # A guest that panics powers off (panic=-1 and -no-reboot) instead of hanging until the time limit.
        # The vhost-user NIC without MSI-X (vectors=0, legacy interrupts): with it, qemu 7.2 under TCG (no
        # KVM: no irqfd) segfaults as the guest's driver starts the device (vhost_net_start ->
        # msix_set_vector_notifiers, a read at address 0x28).
        self.qemu = self.procs.start("qemu", [
            "ip", "netns", "exec", NS, "qemu-system-x86_64", "-nodefaults", "-machine", "q35,accel=tcg",
            "-cpu", "max", "-smp", "1", "-m", "1024", "-display", "none", "-no-reboot", "-snapshot",
            "-object", "memory-backend-memfd,id=mem,size=1024M,share=on", "-numa", "node,memdev=mem",
            "-kernel", f"{i}/vmlinuz", "-initrd", f"{i}/initrd.img",
            "-append", "root=/dev/vda rw console=ttyS0 init=/sbin/softrnic-init panic=-1 printk.time=1",
            "-drive", f"file={i}/root.img,if=virtio,format=raw",
            "-chardev", f"socket,id=vhu,path={vhost},server=on,wait=off",
            "-netdev", "vhost-user,id=n0,chardev=vhu", "-device", f"virtio-net-pci,netdev=n0,mac={GUEST_MAC},vectors=0",
            "-netdev", "tap,id=n1,ifname=tap0,script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=n1,mac={CTRL_MAC}",
            "-fsdev", f"local,id=share,path={self.share},security_model=none",
            "-device", "virtio-9p-pci,fsdev=share,mount_tag=host", "-serial", f"file:{self.console}"])
        deadline = time.time() + 5
        while not os.path.exists(vhost):
            if self.qemu.poll() is not None or time.time() > deadline:
                skip(f"qemu does not start here: {Procs.output(self.qemu)[-800:]}")
            time.sleep(0.1)

    def wait_ready(self):
        """The guest's rxe0 up (the agent's share/ready); sets dev and gid_index."""
        deadline = time.time() + BOOT_S
        ready = os.path.join(self.share, "ready")
        while not os.path.exists(ready):
            failed = os.path.join(self.share, "failed")
            assert not os.path.exists(failed), f"the guest's agent failed: {open(failed).read()}"
            if self.qemu.poll() is not None or time.time() > deadline:
                with open(self.console, errors="replace") as f:
                    console = f.read()[-1500:]
                why = f"qemu's messages: {Procs.output(self.qemu)[-800:]}\nthe console's end: {console}"
                # qemu that started and ended during the boot failed (it crashed, or the guest panicked);
                # a guest slower than BOOT_S is a machine too loaded to run the test.
                assert self.qemu.poll() is None, f"qemu exited ({self.qemu.returncode}) during the boot: {why}"
                skip(f"the guest did not come up in {BOOT_S} s: {why}")
            time.sleep(0.2)
        with open(ready) as f:
            text = f.read()
        self.dev = text.split("interface ")[1].split()[0]
        # The RoCE v2 GID of its IPv4 address, as "GID[  1]:  ::ffff:10.23.0.100, RoCE v2"
        gids = [line for line in text.splitlines() if f"::ffff:{GUEST_IP}, RoCE v2" in line]
        assert gids, f"the guest has no RoCE v2 GID for {GUEST_IP}:\n{text}"
        self.gid_index = int(gids[0].split("GID[")[1].split("]")[0])
        print(f"guest up in {time.time() - self.started:.0f} s: rxe0 on {self.dev}, GID index {self.gid_index}")

    def start(self, script):
        """A job in the guest (sh); its name."""
        self.seq += 1
        name = f"job{self.seq}"
        with open(os.path.join(self.jobs, name + ".tmp"), "w") as f:
            f.write(script + "\n")
        os.rename(os.path.join(self.jobs, name + ".tmp"), os.path.join(self.jobs, name + ".sh"))
        return name

    def wait(self, name, seconds):
        """A job's exit status (None: not in time) and its output."""
        rc = os.path.join(self.jobs, name + ".rc")
        deadline = time.time() + seconds
        while not os.path.exists(rc) and time.time() < deadline and self.qemu.poll() is None:
            time.sleep(0.2)
        out = os.path.join(self.jobs, name + ".out")
        text = open(out).read() if os.path.exists(out) else ""
        return (int(open(rc).read()) if os.path.exists(rc) else None), text

    def run(self, script, seconds=30):
        name = self.start(script)
        rc, out = self.wait(name, seconds)
        assert rc == 0, f"guest job '{script}': exit {rc}\n{out}"
        return out

    def counters(self):
        """The RoCE interface's counters: rx/tx packets and bytes."""
        out = self.run(" ".join(f"cat /sys/class/net/{self.dev}/statistics/{c};"
                                for c in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes")))
        return tuple(int(x) for x in out.split())


def network():
    """NS with the tap the guest's second interface opens (qemu runs in NS), addressed CTRL_HOST."""
    run("ip", "netns", "add", NS)
    run("ip", "-n", NS, "link", "set", "lo", "up")
    run("ip", "-n", NS, "tuntap", "add", "dev", "tap0", "mode", "tap")
    run("ip", "-n", NS, "addr", "add", f"{CTRL_HOST}/24", "dev", "tap0")
    run("ip", "-n", NS, "link", "set", "tap0", "up")


def listens(port, guest=None):
    """Whether a server listens on TCP `port` within 20 s, in NS or, with `guest`, in the guest."""
    wait = f"i=0; until ss -Hltn 'sport = :{port}' | grep -q .; do i=$((i + 1)); [ $i -lt 100 ] || exit 1; " \
           "sleep 0.2; done"
    if guest is not None:
        return guest.wait(guest.start(wait), 30)[0] == 0
    return subprocess.run(["ip", "netns", "exec", NS, "sh", "-c", wait], timeout=30).returncode == 0


def verbs_run(procs, guest, tenant, rnicd, role, port):
    """verbs-check between the tenant's process on rnicd (rnic-verbs-check, `role` server or client) and the
    guest: (softrnic's exit status and output, the guest's)."""
    t = TENANTS[tenant]
    cmd = ["ip", "netns", "exec", NS, "setpriv", f"--regid={t['group']}", "--clear-groups", "taskset", "-c", "0",
           VERBS_CHECK, "-g", str(t["gid_index"]), *VERBS_ARGS, "-p", str(port)]
    env = dict(os.environ, RNIC_DAEMON=rnicd.sock)
    guest_cmd = f"timeout 60 /mnt/host/bin/verbs-check -d rxe0 -g {guest.gid_index} {' '.join(VERBS_ARGS)} -p {port}"
    name = f"verbs-{tenant}-rnicd{rnicd.host}-{role}"
    if role == "server":
        host = procs.start(name, cmd, env)
        assert listens(port), f"{name}: does not listen on TCP port {port}:\n{Procs.output(host)}"
        job = guest.start(f"{guest_cmd} {CTRL_HOST}")
    else:
        job = guest.start(guest_cmd)
        assert listens(port, guest), f"{name}: the guest's server does not listen on TCP port {port}"
        host = procs.start(name, cmd + [CTRL_GUEST], env)
    host_rc = procs.finish(host, 90)
    guest_rc, guest_out = guest.wait(job, 60)
    return host_rc, Procs.output(host), guest_rc, guest_out


def verbs_case(procs, guest, tenant, rnicd, role, port):
    """verbs_run, both ends exit 0 and report every check passed."""
    start = time.time()
    host_rc, host_out, guest_rc, guest_out = verbs_run(procs, guest, tenant, rnicd, role, port)
    assert host_rc == 0 and guest_rc == 0 and "checks passed" in host_out and "checks passed" in guest_out \
        and "failed" not in host_out + guest_out, \
        f"tenant {tenant} on rnicd {rnicd.host} ({role}): softrnic exit {host_rc}, guest exit {guest_rc}\n" \
        f"softrnic: {host_out}\nguest: {guest_out}"
    print(f"tenant {tenant} on rnicd {rnicd.host} ({role}) and the guest's rxe0: "
          f"{host_out.strip().splitlines()[-1]}; {guest_out.strip().splitlines()[-1]} ({time.time() - start:.0f} s)")


def drop_one_tenant(ovs, procs, guest, rnicd, port):
    """The drop rule on tenant A's GID of rnicd: tenant A's verbs-check against the guest ends in its QP's
    RETRY_EXC_ERR, and then tenant B's on the same daemon passes under the rule."""
    gid = ip(rnicd.host, TENANTS["A"]["gid_index"])
    ovs.ofctl("add-flow", "br0", f"priority=200,ip,nw_src={gid},actions=drop")
    host_rc, host_out, guest_rc, guest_out = verbs_run(procs, guest, "A", rnicd, "client", port)
    assert host_rc != 0 and "transport retry counter exceeded" in host_out, \
        f"tenant A through the drop rule: softrnic exit {host_rc}\n{host_out}\nguest: exit {guest_rc}\n{guest_out}"
    dropped = ovs.flow_packets("actions=drop")
    verbs_case(procs, guest, "B", rnicd, "client", port + 1)
    assert dropped > 0 and ovs.flow_packets("actions=drop") == dropped, \
        f"the drop rule counted {dropped} packets of tenant A, then {ovs.flow_packets('actions=drop')}"
    print(f"drop rule on {gid}: {dropped} packets of tenant A dropped, its QP in RETRY_EXC_ERR (transport "
          "retry counter exceeded); tenant B on the same daemon passed under the rule")


def guest_port_matches(ovs, guest):
    """OVS's counters of the guest's port between two readings of the guest's interface (OVS's rx is the
    guest's tx); nothing of softrnic's in flight."""
    before = guest.counters()
    o = ovs.stats("vhuvm")
    after = guest.counters()
    ours = (o["tx_packets"], o["tx_bytes"], o["rx_packets"], o["rx_bytes"])
    assert all(b <= x <= a for b, x, a in zip(before, ours, after)), \
        f"OVS vhuvm {o}\nthe guest's {guest.dev} (rx packets, bytes, tx packets, bytes) {before} then {after}"
    print(f"OVS vhuvm tx {ours[0]} packets {ours[1]} bytes, rx {ours[2]} packets {ours[3]} bytes = the guest's "
          f"{guest.dev} rx and tx (between its readings {before} and {after})")


def scenario(image, procs, tmp):
    network()
    guest = Guest(procs, tmp, image)
    vm_sock = os.path.join(tmp, "vhuvm.sock")
    guest.boot(vm_sock)
    # OVS and the daemons start while the guest boots (under TCG, the longest wait).
    ovs, R = start_bridge(procs, tmp, RNICD)
    ovs.vsctl("add-port", "br0", "vhuvm", "--", "set", "Interface", "vhuvm", "type=dpdkvhostuserclient",
              f"options:vhost-server-path={vm_sock}", "mtu_request=9000")
    before = add_tenant_flows(ovs, [0, 1])
    guest.wait_ready()
    port = 18720
    for tenant, rnicd, role in (("A", R[0], "client"), ("A", R[1], "server"), ("B", R[0], "server"),
                                ("B", R[1], "client")):
        verbs_case(procs, guest, tenant, rnicd, role, port)
        port += 1
    time.sleep(1)		# nothing in flight: the last ACKs are through
    for r in R:
        port_counters_match(ovs, r)
        tenant_flows_match(ovs, r, before[r.host])
    guest_port_matches(ovs, guest)
    drop_one_tenant(ovs, procs, guest, R[0], port)
    return R


def main():
    check_ovs_installed()
    image = os.environ.get("SOFTRNIC_VM_IMAGE", "")
    if not image:
        skip("no guest image: SOFTRNIC_VM_IMAGE unset (scripts/interop.sh sets it to the interop suite's image)")
    if not os.path.exists(os.path.join(image, "root.img")):
        skip(f"no guest image in {image}")
    if shutil.which("qemu-system-x86_64") is None or not os.path.exists("/dev/net/tun"):
        skip("no qemu-system-x86_64 or no /dev/net/tun")
    run_test(lambda procs, tmp: scenario(image, procs, tmp),
             teardown=lambda: subprocess.run(["ip", "netns", "del", NS], capture_output=True))


if __name__ == "__main__":
    main()
