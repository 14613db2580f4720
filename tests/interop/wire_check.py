#!/usr/bin/python3
"""The interop suite's frames on the wire (a capture on the bridge port of softrnic's link):

  wire_check.py PCAPNG SOFTRNIC_IP GUEST_IP [--habits]

Every RoCEv2 frame, softrnic's and Linux Soft-RoCE's, carries the ICRC that an independent implementation
(zlib over the annex A17 pseudo-header: tests/oracle/live_oracle.py) computes; softrnic's UDP source
ports are in the RoCEv2 annex's range (0xC000-0xFFFF). With --habits, instead, the wire habits of real
RNICs (issue 17): softrnic's IP TTL (or hop limit) is 64 whatever smaller hop limit an AV names, its IPv4
ID increments from frame to frame of a flow, and its QP pairs do not all share one UDP source port. Both
check that the capture holds at least 100 frames each way, and print what the guest's rxe does beside
softrnic. Exit 0 when every check passed; the last line says how many did.
"""
import os
import struct
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import wire_oracle  # noqa: E402
from live_oracle import icrc_ok, read_pcapng  # noqa: E402
from wire_oracle import check  # noqa: E402


# BTH opcodes (their low 5 bits) of what a responder sends: READ responses, ACK, atomic ACK.
RESPONSE_OPCODES = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12}


def fields(frame):
    """(src, ttl, ip_id, sport, dest_qpn, response) of a RoCEv2 frame; ip_id is None for IPv6; response:
    the frame is a responder's (its requester and its responder number their frames apart, as the two
    sides of a QP do on an RNIC with separate send and receive engines)."""
    l3 = 18 if frame[12:14] == b"\x81\x00" else 14
    if frame[l3 - 2:l3] == b"\x08\x00":
        ihl = (frame[l3] & 0xF) * 4
        src = ".".join(str(b) for b in frame[l3 + 12:l3 + 16])
        ttl, ip_id, udp = frame[l3 + 8], struct.unpack_from("!H", frame, l3 + 4)[0], l3 + ihl
    else:
        src = frame[l3 + 8:l3 + 24].hex()
        ttl, ip_id, udp = frame[l3 + 7], None, l3 + 40
    sport = struct.unpack_from("!H", frame, udp)[0]
    dest_qpn = int.from_bytes(frame[udp + 8 + 5:udp + 8 + 8], "big")
    response = frame[udp + 8] & 0x1F in RESPONSE_OPCODES
    return src, ttl, ip_id, sport, dest_qpn, response


def describe(name, frames):
    ttls = sorted({f[1] for f in frames})
    ids = [f[2] for f in frames if f[2] is not None]
    sports = sorted({f[3] for f in frames})
    pairs = sorted({f[4] for f in frames})
    print(f"wire: {name}: {len(frames)} frames to {len(pairs)} QPs; TTL {ttls}; IP ID "
          f"{'always 0' if ids and not any(ids) else f'{len(set(ids))} values'}; "
          f"UDP source ports {[hex(p) for p in sports[:8]]}{' ...' if len(sports) > 8 else ''}")


def id_increments(frames):
    """Whether the IPv4 ID moves forward (by 1 to 1024, mod 2^16) between consecutive frames of a flow's
    requests, and of its responses."""
    last = {}
    for _, _, ip_id, sport, qpn, response in frames:
        if ip_id is None:
            continue
        prev = last.get((sport, qpn, response))
        if prev is not None and not 1 <= (ip_id - prev) % 65536 <= 1024:
            return False
        last[(sport, qpn, response)] = ip_id
    return bool(last)


def main():
    args = [a for a in sys.argv[1:] if a != "--habits"]
    if len(args) != 3:
        print(__doc__)
        return 2
    pcap, rnic_ip, guest_ip = args
    habits = "--habits" in sys.argv
    roce = [f for f in read_pcapng(pcap) if icrc_ok(f)[0]]
    by_src = defaultdict(list)
    for f in roce:
        by_src[fields(f)[0]].append(fields(f))
    ours, theirs = by_src.get(rnic_ip, []), by_src.get(guest_ip, [])
    check(len(ours) >= 100 and len(theirs) >= 100,
          f"too few frames captured: {len(ours)} from softrnic, {len(theirs)} from the guest")
    describe("softrnic", ours)
    describe("Linux Soft-RoCE", theirs)
    if not habits:
        bad = [i for i, f in enumerate(roce) if not icrc_ok(f)[1]]
        check(not bad, f"{len(bad)} of {len(roce)} RoCEv2 frames carry a wrong ICRC (first: frame {bad[:1]})")
        check(all(0xC000 <= f[3] <= 0xFFFF for f in ours), "a softrnic UDP source port outside 0xC000-0xFFFF")
    else:
        check(all(f[1] == 64 for f in ours), f"softrnic's TTLs are {sorted({f[1] for f in ours})}, not 64")
        check(id_increments(ours), "softrnic's IPv4 ID does not increment along a flow")
        pairs = {f[4] for f in ours}
        check(len(pairs) < 2 or len({f[3] for f in ours}) > 1,
              f"{len(pairs)} QP pairs share softrnic's one UDP source port {hex(ours[0][3]) if ours else ''}")
    print(f"wire: {len(roce)} RoCEv2 frames: {wire_oracle.PASSED} passed, {wire_oracle.FAILED} failed")
    return 0 if wire_oracle.FAILED == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
