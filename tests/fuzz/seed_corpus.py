#!/usr/bin/python3
"""Write the seed corpus of the fuzzers: every frame of the oracle captures and of rnic-pktgen.
    seed_corpus.py OUTDIR PCAP...            one file per frame (the parser's inputs)
    seed_corpus.py --records OUTDIR PCAP...  the responder's inputs: each frame alone, and runs of four
                                             consecutive frames, as records [length: 2 bytes][steer bits][frame]
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


def main():
    args = sys.argv[1:]
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
