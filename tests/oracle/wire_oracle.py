#!/usr/bin/python3
"""Wire oracles: scapy and tshark, independent of softrnic's C, judge softrnic's frames, and softrnic
judges theirs.

  wire_oracle.py PKTGEN ORACLES_DIR WORKDIR

(a) every frame `rnic-pktgen write` makes decodes in tshark with the expected opcode, PSN, QPN and header
    fields; (b) carries an ICRC that scapy (IPv4) or zlib over the annex A17 pseudo-header (IPv6)
    recomputes identically; (c) frames built by scapy, and the real frames in ORACLES_DIR (Linux rxe,
    ConnectX-4 Lx), parse in softrnic with the fields scapy/tshark see, and one flipped payload bit makes
    softrnic drop the frame for a bad ICRC.
Ends with the line 'N passed, N failed' (one case per check).
"""
import json
import os
import struct
import subprocess
import sys
import zlib

import logging

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)  # scapy warns it cannot do IPv6 ICRCs: we do them
from scapy.all import Ether, IP, IPv6, UDP, Raw, Packet, rdpcap, wrpcap, bind_layers, Dot1Q
from scapy.fields import BitField, IntField, LongField, XIntField, XLongField
from scapy.contrib.roce import BTH, AETH, opcode

PASSED = 0
FAILED = 0


def check(cond, what):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print(f"FAIL: {what}")


# scapy 2.5 defines BTH and AETH only; the other IBA headers are small enough to state here.
class RETH(Packet):
    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dma_len", 0)]


class DETH(Packet):
    name = "DETH"
    fields_desc = [XIntField("qkey", 0), BitField("resv", 0, 8), BitField("src_qp", 0, 24)]


class ImmDt(Packet):
    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


class IETH(Packet):
    name = "IETH"
    fields_desc = [XIntField("rkey", 0)]


class AtomicETH(Packet):
    name = "AtomicETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), LongField("swap_add", 0),
                   LongField("compare", 0)]


class AtomicAckETH(Packet):
    name = "AtomicAckETH"
    fields_desc = [LongField("orig", 0)]


# ---------------------------------------------------------------------------------------------------
# ICRC, computed the way annex A17 states it, with nothing from softrnic


def icrc_ipv6(frame: bytes, l3: int) -> int:
    ip = bytearray(frame[l3:l3 + 40])
    plen = struct.unpack("!H", ip[4:6])[0]
    end = l3 + 40 + plen
    ip[0:4] = b"\x6f\xff\xff\xff"  # version 6, traffic class and flow label masked
    ip[7] = 0xFF  # hop limit
    udp = bytearray(frame[l3 + 40:l3 + 48])
    udp[6:8] = b"\xff\xff"
    bth = bytearray(frame[l3 + 48:l3 + 60])
    bth[4] = 0xFF
    data = b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + frame[l3 + 60:end - 4]
    return zlib.crc32(data) & 0xFFFFFFFF


def scapy_icrc_ok(frame: bytes):
    """(verdict, how) for one frame: scapy rebuilds IPv4 ICRCs, zlib does IPv6."""
    pkt = Ether(frame)
    if IP in pkt:
        if BTH not in pkt:
            return False, "scapy did not see a BTH"
        rebuilt = pkt.copy()
        rebuilt[BTH].icrc = None
        ip_end = 14 + (4 if Dot1Q in pkt else 0) + pkt[IP].len
        return bytes(rebuilt)[ip_end - 4:ip_end] == frame[ip_end - 4:ip_end], "scapy"
    l3 = 18 if Dot1Q in pkt else 14
    plen = struct.unpack("!H", frame[l3 + 4:l3 + 6])[0]
    end = l3 + 40 + plen
    return struct.unpack("<I", frame[end - 4:end])[0] == icrc_ipv6(frame, l3), "zlib/IPv6"


# ---------------------------------------------------------------------------------------------------
# tshark


TSHARK_FIELDS = {
    "opcode": "infiniband.bth.opcode",
    "psn": "infiniband.bth.psn",
    "dqpn": "infiniband.bth.destqp",
    "se": "infiniband.bth.se",
    "pad": "infiniband.bth.padcnt",
    "pkey": "infiniband.bth.p_key",
    "ack_req": "infiniband.bth.a",
    "reth_va": "infiniband.reth.va",
    "reth_rkey": "infiniband.reth.r_key",
    "reth_dma_len": "infiniband.reth.dmalen",
    "aeth_msn": "infiniband.aeth.msn",
    "deth_qkey": "infiniband.deth.q_key",
    "deth_src_qp": "infiniband.deth.srcqp",
    "atomic_swap_add": "infiniband.atomiceth.swapdt",
    "atomic_compare": "infiniband.atomiceth.cmpdt",
    "atomic_ack_orig": "infiniband.atomicacketh.origremdt",
    "imm": "infiniband.immdt",
    "ieth_rkey": "infiniband.ieth",
}


def tshark_decode(pcap):
    cmd = ["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "--disable-protocol", "rpcordma",
           "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"]
    for f in TSHARK_FIELDS.values():
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        vals = line.split("|")
        rows.append(dict(zip(TSHARK_FIELDS.keys(), vals)))
    return rows


def as_int(text):
    text = text.strip()
    if text in ("", None):
        return None
    if text.lower() in ("true", "false"):
        return int(text.lower() == "true")
    try:
        return int(text, 0)
    except ValueError:
        return int(text.replace(":", ""), 16)  # byte fields (ImmDt, IETH) come as hex bytes


# ---------------------------------------------------------------------------------------------------


def check_softrnic_frames(pktgen, workdir):
    pcap = os.path.join(workdir, "softrnic-frames.pcap")
    out = subprocess.run([pktgen, "write", pcap], check=True, capture_output=True, text=True).stdout
    expected = [json.loads(line) for line in out.splitlines()]
    frames = [bytes(p) for p in rdpcap(pcap)]
    check(len(frames) == len(expected) and len(frames) >= 76,
          f"pktgen wrote {len(frames)} frames, described {len(expected)}")
    versions = {e["ip_version"] for e in expected}
    check(versions == {4, 6}, f"both IP versions present: {versions}")

    # (a) tshark
    rows = tshark_decode(pcap)
    for exp, row in zip(expected, rows):
        where = f"frame {exp['frame']} ({exp['name']}, IPv{exp['ip_version']})"
        for key in TSHARK_FIELDS:
            if key not in exp:
                continue
            got = as_int(row.get(key, ""))
            check(got == exp[key], f"{where}: tshark {TSHARK_FIELDS[key]} = {got}, expected {exp[key]}")

    # (b) ICRC recomputed independently
    for exp, frame in zip(expected, frames):
        ok, how = scapy_icrc_ok(frame)
        check(ok, f"frame {exp['frame']} ({exp['name']}, IPv{exp['ip_version']}): ICRC differs ({how})")
    # ... and the oracle itself can tell a wrong ICRC: one flipped bit in a frame of each IP version
    for version in (4, 6):
        i = next(i for i, e in enumerate(expected) if e["ip_version"] == version and e["payload_len"])
        bad = bytearray(frames[i])
        bad[-6] ^= 0x04
        check(not scapy_icrc_ok(bytes(bad))[0], f"the IPv{version} ICRC oracle accepted a corrupted frame")


def softrnic_parse(pktgen, pcap):
    out = subprocess.run([pktgen, "parse", pcap], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def scapy_frames():
    """Frames scapy builds (scapy computes the IPv4 ICRC; IPv6 ICRCs come from icrc_ipv6)."""
    e = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    ip4 = IP(src="10.77.0.1", dst="10.77.0.2", ttl=64, flags="DF", id=7)
    ip6 = IPv6(src="fd00::1", dst="fd00::2", hlim=64)
    udp = UDP(sport=0xC001, dport=4791, chksum=0)
    cases = []

    def add(l3, bth, *rest, expect):
        pkt = e / l3 / udp / bth
        for layer in rest:
            pkt = pkt / layer
        cases.append((pkt, expect))

    payload = bytes(range(33))
    add(ip4, BTH(opcode=opcode("RC", "SEND_ONLY")[0], dqpn=0x12, psn=0x345, padcount=3, ackreq=1),
        Raw(payload + b"\0" * 3), expect={"opcode": 4, "dqpn": 0x12, "psn": 0x345, "payload_len": 33,
                                           "ack_req": 1, "pad": 3})
    add(ip4, BTH(opcode=opcode("RC", "RDMA_WRITE_ONLY")[0], dqpn=0x44, psn=9),
        RETH(va=0x1000, rkey=0xABCD, dma_len=8), Raw(b"12345678"),
        expect={"opcode": 10, "reth_va": 0x1000, "reth_rkey": 0xABCD, "reth_dma_len": 8, "payload_len": 8})
    add(ip4, BTH(opcode=opcode("RC", "ACKNOWLEDGE")[0], dqpn=0x99, psn=0xFFFFFF),
        AETH(syndrome=0x1F, msn=0x42), expect={"opcode": 17, "aeth_syndrome": 0x1F, "aeth_msn": 0x42,
                                               "psn": 0xFFFFFF})
    add(ip4, BTH(opcode=opcode("RC", "FETCH_ADD")[0], dqpn=3, psn=5),
        AtomicETH(va=0x2000, rkey=0x77, swap_add=5, compare=0),
        expect={"opcode": 20, "atomic_va": 0x2000, "atomic_rkey": 0x77, "atomic_swap_add": 5})
    add(ip4, BTH(opcode=opcode("RC", "ATOMIC_ACKNOWLEDGE")[0], dqpn=3, psn=5),
        AETH(syndrome=0, msn=1), AtomicAckETH(orig=0x1122334455667788),
        expect={"opcode": 18, "atomic_ack_orig": 0x1122334455667788})
    add(ip4, BTH(opcode=opcode("UD", "SEND_ONLY_WITH_IMMEDIATE")[0], dqpn=1, psn=2),
        DETH(qkey=0x80010000, src_qp=0x55), ImmDt(imm=0xCAFE), Raw(b"ud!\0"),
        expect={"opcode": 0x65, "deth_qkey": 0x80010000, "deth_src_qp": 0x55, "imm": 0xCAFE,
                "payload_len": 4})
    # RC SEND_ONLY_WITH_INVALIDATE: IBA 1.2 added it, scapy 2.5 does not name it
    add(ip4, BTH(opcode=0x17, dqpn=8, psn=8),
        IETH(rkey=0x1234), Raw(b"abcd"), expect={"opcode": 0x17, "ieth_rkey": 0x1234})
    add(ip6, BTH(opcode=opcode("UC", "RDMA_WRITE_ONLY_WITH_IMMEDIATE")[0], dqpn=0x66, psn=0x10),
        RETH(va=0xFEED, rkey=0x5, dma_len=4), ImmDt(imm=0xBEEF), Raw(b"v6v6"),
        expect={"opcode": 0x2B, "ip_version": 6, "imm": 0xBEEF, "reth_va": 0xFEED, "payload_len": 4})
    add(ip6, BTH(opcode=opcode("RC", "RDMA_READ_REQUEST")[0], dqpn=0x67, psn=0x11),
        RETH(va=0x4000, rkey=0x6, dma_len=65536),
        expect={"opcode": 12, "ip_version": 6, "reth_dma_len": 65536})

    frames = []
    for pkt, expect in cases:
        raw = bytes(pkt)  # scapy appends the ICRC for IPv4
        if IPv6 in pkt:
            raw = raw[:-4] + struct.pack("<I", icrc_ipv6(raw, 14))
        frames.append((raw, expect))
    return frames


def check_foreign_frames(pktgen, oracles, workdir):
    # (c1) scapy-built frames
    built = scapy_frames()
    pcap = os.path.join(workdir, "scapy-frames.pcap")
    wrpcap(pcap, [Ether(f) for f, _ in built])
    parsed = softrnic_parse(pktgen, pcap)
    for i, ((frame, expect), got) in enumerate(zip(built, parsed)):
        check(got["drop"] == "none", f"scapy frame {i + 1}: softrnic dropped it ({got['drop']})")
        for k, v in expect.items():
            check(got.get(k) == v, f"scapy frame {i + 1}: softrnic {k} = {got.get(k)}, scapy built {v}")
    flipped = []
    for frame, expect in built:
        if expect.get("payload_len"):
            b = bytearray(frame)
            b[-6] ^= 0x01  # inside the payload (the last 4 bytes are the ICRC)
            flipped.append(bytes(b))
    pcap = os.path.join(workdir, "scapy-flipped.pcap")
    wrpcap(pcap, [Ether(f) for f in flipped])
    for i, got in enumerate(softrnic_parse(pktgen, pcap)):
        check(got["drop"] == "bad_icrc", f"flipped scapy frame {i + 1}: softrnic said {got['drop']}")

    # (c2) real frames: rxe (Soft-RoCE) and a ConnectX-4 Lx CNP, against tshark's decode of the same file
    for name in ("softroce-golden.pcap", "connectx4lx_cnp.pcap"):
        path = os.path.join(oracles, name)
        parsed = softrnic_parse(pktgen, path)
        rows = tshark_decode(path)
        roce = 0
        for got, row in zip(parsed, rows):
            if as_int(row["opcode"]) is None:
                continue  # not RoCE (TCP, ARP...)
            roce += 1
            where = f"{name} frame {got['frame']}"
            check(got["drop"] == "none", f"{where}: softrnic dropped it ({got['drop']})")
            if got["drop"] != "none":
                continue
            for key in ("opcode", "psn", "dqpn", "reth_va", "reth_rkey", "reth_dma_len", "aeth_msn",
                        "deth_qkey", "deth_src_qp", "atomic_swap_add", "atomic_compare", "atomic_ack_orig"):
                want = as_int(row.get(key, ""))
                mine = key
                if key in ("reth_va", "reth_rkey") and "atomic_va" in got:
                    mine = key.replace("reth", "atomic")  # tshark shows AtomicETH's VA and R_Key as RETH fields
                if want is not None:
                    check(got.get(mine) == want, f"{where}: softrnic {mine} = {got.get(mine)}, tshark {want}")
        check(roce == (164 if name.startswith("softroce") else 1), f"{name}: {roce} RoCE frames seen")

    # one flipped payload bit in each rxe frame that has a payload
    frames = [bytes(p) for p in rdpcap(os.path.join(oracles, "softroce-golden.pcap"))]
    parsed = softrnic_parse(pktgen, os.path.join(oracles, "softroce-golden.pcap"))
    flipped = []
    for frame, got in zip(frames, parsed):
        if got["drop"] == "none" and got["payload_len"] > 0:
            b = bytearray(frame)
            b[-6] ^= 0x80
            flipped.append(Ether(bytes(b)))
    pcap = os.path.join(workdir, "golden-flipped.pcap")
    wrpcap(pcap, flipped)
    verdicts = [g["drop"] for g in softrnic_parse(pktgen, pcap)]
    check(len(verdicts) > 50 and all(v == "bad_icrc" for v in verdicts),
          f"flipped rxe frames: {len(verdicts)} frames, verdicts {set(verdicts)}")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    pktgen, oracles, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    check_softrnic_frames(pktgen, workdir)
    check_foreign_frames(pktgen, oracles, workdir)
    print(f"{PASSED} passed, {FAILED} failed")
    return 0 if FAILED == 0 and PASSED > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
