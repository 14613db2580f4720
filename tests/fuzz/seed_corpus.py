#!/usr/bin/python3
"""Write the seed corpus of the fuzzers: every frame of the oracle captures and of rnic-pktgen.
    seed_corpus.py OUTDIR PCAP...            one file per frame (the parser's inputs)
    seed_corpus.py --records OUTDIR PCAP...  the responder's inputs: each frame alone, and runs of four
                                             consecutive frames, as records [length: 2 bytes][steer bits][frame]
    seed_corpus.py --hostif OUTDIR           fuzz_hostif's inputs: the tenant's traffic (every kind of work
                                             request on each QP, pumped), alone and with a few writes into its
                                             queues, CQ and doorbell queue, as records
                                             [kind][target][offset: 2 bytes][length][bytes]
"""
import os
import struct
import sys


def frames(path):
    data = open(path, "rb").read()
    if struct.unpack_from("<I", data)[0] != 0xA1B2C3D4:
        return
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        yield data[off + 16:off + 16 + caplen]
        off += 16 + caplen


def record(frame, bits):
    return struct.pack(">HB", len(frame), bits) + frame


def inputs(paths, records):
    for path in paths:
        fs = list(frames(path))
        if not records:
            yield from fs
            continue
        # steer bits 0x0b: expected PSN, a live R_Key, the right Q_Key
        yield from (record(f, 0x0b) for f in fs)
        for i in range(0, max(len(fs) - 3, 0), 2):
            yield b"".join(record(f, 0x0b) for f in fs[i:i + 4])


# fuzz_hostif's record kinds (enum op in tests/fuzz/fuzz_hostif.c)
QP_HIF, CQ_HIF, DBQ, DOORBELL, POST_SEND, POST_RECV, PUMP, POLL, STEP = range(9)


def op(kind, target=0, offset=0, data=b""):
    return struct.pack(">BBHB", kind, target, offset, len(data)) + data


def hostif_inputs():
    traffic = []
    for qp in range(3):
        for k in range(7):
            traffic.append(op(POST_SEND, qp, 0, bytes([k, 16])) + op(PUMP, 3) + op(POLL))
    yield from traffic
    yield b"".join(traffic)
    scribbles = [op(QP_HIF, 0, 0, bytes(16)), op(QP_HIF, 0, 48, b"\xff" * 8), op(CQ_HIF, 0, 4096, b"\x01" * 8),
                 op(DBQ, 0, 0, b"\x40\x00\x00\x00" * 4), op(DOORBELL, 0, 0, bytes(8))]
    for s in scribbles:
        yield traffic[0] + s + traffic[1]
    # 50 KB WRITEs on the RC and UC QPs sent 8 packets at a time, their first WQE's segments overwritten
    # between two steps (NextSeg, RaddrSeg, DataSeg: zeros, all ones).
    stepped = op(POST_SEND, 0, 0, bytes([0, 200])) + op(POST_SEND, 1, 0, bytes([0, 200])) + op(STEP, 7)
    for qp in range(2):
        for off in (0, 16, 32):
            for fill in (b"\x00", b"\xff"):
                yield stepped + op(QP_HIF, qp, off, fill * 16) + op(STEP, 7) + op(PUMP, 3) + op(POLL)


def main():
    args = sys.argv[1:]
    if args[0] == "--hostif":
        os.makedirs(args[1], exist_ok=True)
        for n, data in enumerate(hostif_inputs()):
            with open(os.path.join(args[1], f"seed-{n:05d}"), "wb") as fd:
                fd.write(data)
        return 0
    records = args[0] == "--records"
    if records:
        args = args[1:]
    out = args[0]
    os.makedirs(out, exist_ok=True)
    n = 0
    for data in inputs(args[1:], records):
        with open(os.path.join(out, f"seed-{n:05d}"), "wb") as fd:
            fd.write(data)
        n += 1
    print(f"{n} seeds")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
