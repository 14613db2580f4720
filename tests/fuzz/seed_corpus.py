#!/usr/bin/python3
"""Write the seed corpus of the parser fuzzer: every frame of the oracle captures and of rnic-pktgen,
one file per frame.   seed_corpus.py OUTDIR PCAP...
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


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for path in sys.argv[2:]:
        for f in frames(path):
            with open(os.path.join(out, f"seed-{n:05d}"), "wb") as fd:
                fd.write(f)
            n += 1
    print(f"{n} seeds")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
