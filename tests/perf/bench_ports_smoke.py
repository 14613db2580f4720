"""scripts/bench.py --port, short: every port kind's runs and ratios as JSON lines, or a skip with its reason
(veth without root, net_af_xdp without AF_XDP in the kernel or DPDK), and nothing left behind (network namespaces, DPDK runtime directories).
net_memif needs neither root nor namespaces: its ratios must be there. The raw rates come from rnic-baseline
--ethdev PORT --send MAC on one side and --receive on the other (scripts/bench_ports.py); each kind's two raw
runs are checked here. Usage: bench_ports_smoke.py BENCH_PY BUILD
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def leftovers():
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return {x for x in ns if x.startswith("rnic-bp-")} | set(glob.glob("/var/run/dpdk/rnic-bp-*"))


def main():
    bench, build = sys.argv[1:3]
    sys.path.insert(0, os.path.dirname(bench))
    from bench_ports import af_xdp_unavailable    # pylint: disable=import-outside-toplevel
    before = leftovers()
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        p = subprocess.run([sys.executable, bench, "--build", build, "--port", "memif,af_packet,af_xdp", "--runs", "1",
                            "--seconds", "0.3", "--out", out.name], capture_output=True, text=True, timeout=240)
        lines = [json.loads(x) for x in open(out.name) if x.strip()]
    print(p.stdout[-3000:], p.stderr[-3000:])
    assert p.returncode == 0, f"bench.py --port: exit {p.returncode}"
    failed = []
    for kind in ("memif", "af_packet", "af_xdp"):
        summary = {x["summary"]: x for x in lines if x.get("port_kind") == kind and "summary" in x}
        skipped = [x["skipped"] for x in lines if x.get("port_kind") == kind and "skipped" in x]
        if skipped:
            print(f"{kind}: skipped: {skipped[0]}")
            root = os.geteuid() == 0
            if (kind == "memif" or (kind == "af_packet" and root) or not skipped[0] or
                    (kind == "af_xdp" and root and af_xdp_unavailable() is None)):
                failed.append(f"{kind} skipped")
            continue
        for fig in ("port_write_64B_msg_rate", "port_write_64KB_goodput"):
            x = summary.get(fig)
            if x is None or not x["ratio"] or x["ratio"] <= 0 or x["baseline_value"] <= 0:
                failed.append(f"{kind}: {fig}: {x}")
            else:
                print(f"{kind}: {fig} {x['value']:.3f} {x['unit']}, {x['ratio']:.3f} of raw")
        runs = [x for x in lines if x.get("port_kind") == kind and x.get("case") in ("raw_138B", "raw_mtu")]
        if len(runs) != 2:
            failed.append(f"{kind}: {len(runs)} raw runs, not 2")
    left = leftovers() - before
    if left:
        failed.append(f"left behind: {sorted(left)}")
    for f in failed:
        print("FAIL:", f)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
