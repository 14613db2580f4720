#!/usr/bin/python3
"""Run the commands the documentation shows, and check that each exits 0.

    doc_commands.py SOURCE_DIR BUILD_DIR FILE.md...

A fenced code block right after a marker line is run:

    <!-- doc-test -->                      the block as one bash script (set -e), in order; what it starts
                                           in the background (&) must exit 0 too
    <!-- doc-test: parallel -->            each command at once, in the block's order (a server, then its
                                           client); every one must exit 0
    <!-- doc-test: parallel wait=PATH -->  ... each next command once PATH exists (a server's socket)
    <!-- doc-test: netns -->               needs root: creates network namespaces or veths

As root every block runs in a network and mount namespace of its own (unshare), with /run/netns and
/var/run/dpdk private: its namespaces, interfaces, TCP ports and DPDK runtime directories are its own and go
with it. Without root the blocks marked netns are skipped (said so), the others run as they are.

What the text shows is run as shown, but: "build/" at the start of a word is BUILD_DIR, "/tmp/" is a
directory of this run, and the runs are short: rnic-perf's -D is 1 second at most, -n at most 2000, a -a
sweep without -n gets -n 5 (an 8 MB message takes tens of milliseconds). Every block is bounded in time
(120 s, or timeout=N in its marker). Add a document: mark its blocks and list it in tests/docs/meson.build.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*doc-test(?::\s*(.*?))?\s*-->\s*$")


def blocks(path):
    """(line, options, commands) of each marked block; a command's continued lines joined."""
    lines = open(path).read().split("\n")
    out = []
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        opts = dict(o.split("=", 1) if "=" in o else (o, "") for o in (m.group(1) or "").split())
        j = i + 1
        if j >= len(lines) or not lines[j].startswith("```"):
            raise SystemExit(f"{path}:{i + 1}: a doc-test marker without a fenced block after it")
        body = []
        for k in range(j + 1, len(lines)):
            if lines[k].startswith("```"):
                break
            body.append(lines[k])
        else:
            raise SystemExit(f"{path}:{i + 1}: the block does not end")
        text = "\n".join(body).replace("\\\n", " ")
        out.append((i + 1, opts, [c for c in text.split("\n") if c.strip()]))
    return out


def shorten(cmd):
    """A command as run: short durations, few iterations."""
    if "rnic-perf" not in cmd and "rnic_" not in cmd:
        return cmd
    cmd = re.sub(r"(^|\s)-D\s+(\d+(?:\.\d+)?)", lambda m: f"{m.group(1)}-D {min(float(m.group(2)), 1):g}", cmd)
    cmd = re.sub(r"(^|\s)-n\s+(\d+)", lambda m: f"{m.group(1)}-n {min(int(m.group(2)), 2000)}", cmd)
    if re.search(r"(^|\s)-a(\s|$)", cmd) and not re.search(r"(^|\s)-n\s", cmd):
        cmd = re.sub(r"(^|\s)-a(\s|$)", r"\1-a -n 5\2", cmd, count=1)
    return cmd


def rewrite(cmd, build, tmp):
    """The text's /tmp/ first: BUILD_DIR itself may lie under /tmp."""
    cmd = cmd.replace("/tmp/", tmp + "/")
    cmd = re.sub(r"(^|[\s=])build/", lambda m: m.group(1) + build + "/", cmd)
    return shorten(cmd)


def script(opts, cmds, build, tmp):
    cmds = [rewrite(c, build, tmp) for c in cmds]
    if "parallel" not in opts:
        return "set -e\n" + "\n".join(cmds) + "\nfor j in $(jobs -p); do wait $j; done\n"
    wait = opts.get("wait", "").replace("/tmp/", tmp + "/")
    s = "pids=()\n"
    for n, c in enumerate(cmds):
        if n > 0 and wait:
            s += f"for _ in $(seq 100); do [ -e {shlex.quote(wait)} ] && break; sleep 0.1; done\n"
        s += f"{c} &\npids+=($!)\n"
    return s + "rc=0\nfor p in \"${pids[@]}\"; do wait $p || rc=1; done\nexit $rc\n"


def isolated(body):
    """The script in namespaces of its own (root): net, mount; /run/netns and /var/run/dpdk private."""
    setup = ("mount --make-rprivate / && mkdir -p /run/netns /var/run/dpdk && mount -t tmpfs none /run/netns && "
             "mount -t tmpfs none /var/run/dpdk && ip link set lo up && exec bash -c " + shlex.quote(body))
    return ["unshare", "--net", "--mount", "--fork", "bash", "-c", setup]


def run_block(src, build, path, line, opts, cmds):
    root = os.geteuid() == 0
    if "netns" in opts and not root:
        print(f"skipped {path}:{line}: needs root (network namespaces)")
        return True
    with tempfile.TemporaryDirectory() as tmp:
        body = script(opts, cmds, os.path.abspath(build), tmp)
        argv = isolated(body) if root else ["bash", "-c", body]
        try:
            p = subprocess.run(argv, cwd=src, capture_output=True, text=True, timeout=int(opts.get("timeout", 120)))
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
    print(f"{'ok' if rc == 0 else 'FAIL'} {path}:{line}: {len(cmds)} command(s)" + ("" if rc == 0 else f", exit {rc}"))
    if rc != 0:
        print("  " + "\n  ".join(body.split("\n")))
        print(out[-6000:])
    return rc == 0


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    src, build, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    passed = failed = 0
    for f in files:
        path = os.path.join(src, f)
        found = blocks(path)
        if not found:
            raise SystemExit(f"{f}: no doc-test block (a document listed must mark its commands)")
        for line, opts, cmds in found:
            if run_block(src, build, f, line, opts, cmds):
                passed += 1
            else:
                failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
