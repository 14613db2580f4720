#!/usr/bin/python3
"""CM exchanges under tshark: run the CM test (tests/cm/test_cm.c) with the engine capturing every frame
(--pcap), then check that tshark decodes its MADs as the InfiniBand CM (`CM: ConnectRequest`,
`ConnectReply`, `ReadyToUse`, `DisconnectRequest`, `DisconnectReply`, `ConnectReject`) with the fields
librdmacm's rdma_cm sets for RoCEv2: the service ID of RDMA_PS_TCP and the port, the IP CM header with both
addresses and the source port, permissive LIDs, the IPv4 GIDs, P_Key 0xffff, the CM timeouts and retries,
QP1's Q_Key and QPNs; REP, RTU and DREQ naming the connection by its communication IDs; REJ reasons 8 and 28.

  cm_capture.py CM_TEST WORKDIR
Ends with 'N passed, N failed'.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import wire_oracle  # noqa: E402
from wire_oracle import check  # noqa: E402

FIELDS = [
    "frame.number", "_ws.col.Info", "infiniband.bth.destqp", "infiniband.deth.q_key", "infiniband.deth.srcqp",
    "infiniband.mad.attributeid",
    "infiniband.cm.req", "infiniband.cm.req.serviceid", "infiniband.cm.req.serviceid.dport",
    "infiniband.cm.req.localqpn", "infiniband.cm.req.startpsn", "infiniband.cm.req.pkey",
    "infiniband.cm.req.transpsvctype", "infiniband.cm.req.remoteresptout", "infiniband.cm.req.localresptout",
    "infiniband.cm.req.maxcmretr", "infiniband.cm.req.retrcount", "infiniband.cm.req.rnrretrcount",
    "infiniband.cm.req.responderres", "infiniband.cm.req.initdepth", "infiniband.cm.req.prim_locallid",
    "infiniband.cm.req.prim_remotelid", "infiniband.cm.req.prim_localgid_ipv4",
    "infiniband.cm.req.prim_remotegid_ipv4", "infiniband.cm.req.prim_hoplim", "infiniband.cm.req.prim_localacktout",
    "infiniband.cm.req.ip_cm.majv", "infiniband.cm.req.ip_cm.ipv", "infiniband.cm.req.ip_cm.sport",
    "infiniband.cm.req.ip_cm.sip4", "infiniband.cm.req.ip_cm.dip4", "infiniband.cm.req.ip_cm.private",
    "infiniband.cm.rep", "infiniband.cm.rep.remotecommid", "infiniband.cm.rep.localqpn",
    "infiniband.cm.rep.respres", "infiniband.cm.rep.initdepth", "infiniband.cm.rtu.remotecommid",
    "infiniband.cm.dreq.remotecommid", "infiniband.cm.rej.reason",
]


def num(text):
    return int(text, 0) if text else None


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    test, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    pcap = os.path.join(work, "cm.pcapng")
    run = subprocess.run([test, "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", "0,1",
                          "--log-level=error", "--", "--fault", "drop=0", "--pcap", pcap],
                         capture_output=True, text=True, timeout=300)
    check(run.returncode == 0, f"the CM test failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    args = ["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-Y", "infiniband.mad.mgmtclass == 7",
            "-T", "fields", "-E", "occurrence=f"]
    for f in FIELDS:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = [dict(zip(FIELDS, line.split("\t"))) for line in out.splitlines()]
    infos = [r["_ws.col.Info"] for r in rows]
    for name in ("ConnectRequest", "ConnectReply", "ReadyToUse", "DisconnectRequest", "DisconnectReply",
                 "ConnectReject"):
        check(f"CM: {name}" in infos, f"no frame decoded as CM: {name}")
    # The hostile test's MADs come from an ordinary UD QP, and QP1 answers it there: one end is always QP1.
    check(all((num(r["infiniband.bth.destqp"]) == 1 or num(r["infiniband.deth.srcqp"]) == 1) and
              num(r["infiniband.deth.q_key"]) == 0x80010000 for r in rows),
          "a CM MAD neither from nor to QP1, or without the Q_Key 0x80010000")

    # The first connection (the test's first: port 7471, device 1 -> device 0).
    req = next(r for r in rows if r["_ws.col.Info"] == "CM: ConnectRequest")
    want = {
        "infiniband.cm.req.serviceid": 0x0000000001061D2F, "infiniband.cm.req.serviceid.dport": 7471,
        "infiniband.cm.req.pkey": 0xFFFF, "infiniband.cm.req.transpsvctype": 0,
        "infiniband.cm.req.remoteresptout": 20, "infiniband.cm.req.localresptout": 20,
        "infiniband.cm.req.maxcmretr": 15, "infiniband.cm.req.retrcount": 7, "infiniband.cm.req.rnrretrcount": 7,
        "infiniband.cm.req.responderres": 1, "infiniband.cm.req.initdepth": 1,
        "infiniband.cm.req.prim_locallid": 0xFFFF, "infiniband.cm.req.prim_remotelid": 0xFFFF,
        "infiniband.cm.req.prim_hoplim": 64, "infiniband.cm.req.prim_localacktout": 17,
        "infiniband.cm.req.ip_cm.majv": 0, "infiniband.cm.req.ip_cm.ipv": 4,
    }
    for field, value in want.items():
        check(num(req[field]) == value, f"REQ {field} = {req[field]}, expected {value:#x}")
    check(req["infiniband.cm.req.prim_localgid_ipv4"] == "10.77.0.2", "REQ's local GID is not device 1's")
    check(req["infiniband.cm.req.prim_remotegid_ipv4"] == "10.77.0.1", "REQ's remote GID is not device 0's")
    check(req["infiniband.cm.req.ip_cm.sip4"] == "10.77.0.2" and req["infiniband.cm.req.ip_cm.dip4"] == "10.77.0.1",
          "the IP CM header's addresses")
    check(32768 <= num(req["infiniband.cm.req.ip_cm.sport"]) <= 60999, "the IP CM source port is not ephemeral")
    check(bytes.fromhex(req["infiniband.cm.req.ip_cm.private"].replace(":", "")).startswith(b"hello from the client"),
          "the application's private data after the IP CM header")
    check(num(req["infiniband.cm.req.localqpn"]) > 1 and num(req["infiniband.cm.req.startpsn"]) < 1 << 24,
          "REQ's QPN and PSN")
    check(num(req["infiniband.bth.destqp"]) == 1 and num(req["infiniband.deth.srcqp"]) == 1, "REQ not QP1 to QP1")
    comm = num(req["infiniband.cm.req"])
    rep = next(r for r in rows if r["_ws.col.Info"] == "CM: ConnectReply")
    check(num(rep["infiniband.cm.rep.remotecommid"]) == comm, "the REP names another REQ")
    check(num(rep["infiniband.cm.rep.localqpn"]) > 1, "REP's QPN")
    check(num(rep["infiniband.cm.rep.respres"]) == 1 and num(rep["infiniband.cm.rep.initdepth"]) == 1,
          "REP's depths")
    rtu = next(r for r in rows if r["_ws.col.Info"] == "CM: ReadyToUse")
    check(num(rtu["infiniband.cm.rtu.remotecommid"]) == num(rep["infiniband.cm.rep"]), "the RTU names another REP")
    dreq = next(r for r in rows if r["_ws.col.Info"] == "CM: DisconnectRequest")
    check(num(dreq["infiniband.cm.dreq.remotecommid"]) == num(rep["infiniband.cm.rep"]),
          "the DREQ names another connection")
    reasons = {num(r["infiniband.cm.rej.reason"]) for r in rows if r["_ws.col.Info"] == "CM: ConnectReject"}
    check({8, 28} <= reasons, f"REJ reasons {reasons}: 8 (no listener) and 28 (rnic_cm_reject) expected")
    print(f"{len(rows)} CM frames checked")
    print(f"{wire_oracle.PASSED} passed, {wire_oracle.FAILED} failed")
    return 0 if wire_oracle.FAILED == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
