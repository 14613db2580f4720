#!/usr/bin/python3
"""rnicd beside Open vSwitch with DPDK (issue 23, doc/deploy.md): two rnicd instances, each on a
dpdkvhostuserclient port of one OVS-DPDK bridge (net_virtio_user in rnicd, its socket's server), with two
tenants each: tenant A (processes of primary group 100) sends only from GID 1, tenant B (group 65534) only
from GID 2 (`tenant gid=N gids I`), so that OpenFlow rules tell them apart by IP address.
    ovs.py RNICD RNIC_PERF
  1. both tenants at once: verified RC WRITE, READ and SEND (rnic-perf --verify) from rnicd 0 to rnicd 1;
  2. tenant B naming tenant A's GID index is refused: an RC QP by rnicd (its QP never leaves INIT), a UD
     SEND by the engine;
  3. OVS's counters of rnicd 0's port (ovs-ofctl dump-ports) equal its ethdev's (/ethdev/stats), and each
     tenant's flow (nw_src its GID) counted exactly the request packets rnicd counted for that tenant;
  4. an OpenFlow rule dropping tenant A's GID stops exactly tenant A: its QP ends in RETRY_EXC_ERR, tenant
     B's verified WRITEs go on through the rule and finish.
The test starts its own ovsdb-server and ovs-vswitchd-dpdk (run, database and log directories in a
temporary directory, never the system's), on no hugepages (dpdk-extra --no-huge --legacy-mem: without
--legacy-mem OVS adds --in-memory, which --no-huge refuses), and stops everything it started. Exit 77 with
the reason where OVS-DPDK is not installed or does not initialise.
"""
import os
import sys
import time

from ovs_env import (TENANTS, Procs, add_tenant_flows, check_ovs_installed, ip, port_counters_match, run_test,
                     start_bridge, tenant_flows_match, tenant_stats)

RNICD, PERF = sys.argv[1], sys.argv[2]


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
    d = port_counters_match(ovs, R[0])
    tenant_flows_match(ovs, R[0], before, d["retransmits"])


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


def scenario(procs, tmp):
    global R
    ovs, R = start_bridge(procs, tmp, RNICD)
    before = add_tenant_flows(ovs, [0])[0]
    verified_ops(procs)
    foreign_gid_refused(procs)
    counters_match(ovs, before)
    drop_one_tenant(ovs, procs)
    return R


def main():
    check_ovs_installed()
    run_test(scenario)


if __name__ == "__main__":
    main()
