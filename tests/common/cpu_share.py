#!/usr/bin/python3
"""What share of a run a machine shared with others let a process's lcores have: every thread that ran a
fifth of the time or more (a polling lcore) and how long it waited for a CPU while runnable (its schedstat's
run_delay), and what the hypervisor stole (/proc/stat). A rate per second the lcores could run holds on a
loaded machine, where a rate by the clock does not.
    cpu_share.py sample REGEX   every 0.25 s until killed, a line for the processes whose command line
                                matches REGEX: time, steal, total ticks, TID:RAN:DELAY...
"""
import glob
import re
import sys
import time


def sample(pids):
    """One sample: (monotonic ns, stolen ticks, all ticks, {tid: (ran ns, waited ns)}) of the pids' threads."""
    ticks = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    threads = {}
    for pid in pids:
        for st in glob.glob(f"/proc/{pid}/task/*/schedstat"):
            try:
                ran, waited = open(st).read().split()[:2]
            except (OSError, ValueError):
                continue              # the thread ended
            threads[st.split("/")[4]] = (int(ran), int(waited))
    return time.monotonic_ns(), ticks[7], sum(ticks), threads


def share(samples):
    """1 less the largest share of its time (from the first sample it is in to its last, at least 0.1 s) a
    thread that ran a fifth of it or more waited to run, less the share stolen; 0 when nothing was measured."""
    seen = {}                         # tid: (ns, ran, waited) when first sampled, and when last
    for ns, _, _, threads in samples:
        for tid, (ran, waited) in threads.items():
            seen[tid] = (seen.get(tid, ((ns, ran, waited),))[0], (ns, ran, waited))
    waited = [(b[2] - a[2]) / (b[0] - a[0]) for a, b in seen.values()
              if b[0] - a[0] >= 1e8 and (b[1] - a[1]) / (b[0] - a[0]) >= 0.2]
    if not waited:
        return 0.0
    steal = (samples[-1][1] - samples[0][1]) / max(1, samples[-1][2] - samples[0][2])
    return max(0.0, 1 - max(waited) - steal)


def matching(regex):
    """The pids whose command line matches regex."""
    pids = []
    for cmd in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if regex.search(open(cmd).read().replace("\0", " ")):
                pids.append(cmd.split("/")[2])
        except OSError:
            pass
    return pids


def read(path):
    """The samples `sample` printed to path."""
    out = []
    for line in open(path):
        f = line.split()
        if len(f) >= 3:
            threads = {t: (int(r), int(w)) for t, r, w in (x.split(":") for x in f[3:])}
            out.append((int(f[0]), int(f[1]), int(f[2]), threads))
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "sample":
        sys.exit("usage: cpu_share.py sample REGEX")
    regex = re.compile(sys.argv[2])
    while True:
        ns, steal, total, threads = sample(matching(regex))
        print(ns, steal, total, *(f"{t}:{r}:{w}" for t, (r, w) in threads.items()), flush=True)
        time.sleep(0.25)


if __name__ == "__main__":
    main()
