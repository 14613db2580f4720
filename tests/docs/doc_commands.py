#!/usr/bin/python3
"""Every command the documentation shows is run, or names the test that runs it.

    doc_commands.py [--check] SOURCE_DIR BUILD_DIR [FILE...]   (default: README.md, doc/*.md, doc/man/*)

--check: the markers only (every command marked, every claim true), nothing run.

A command is a line of a code block (fenced or indented; in a man page, between .nf and .fi) or an inline
code span (`...`) whose first word, after VAR=value assignments and sudo, is a program: a path under
build/, scripts/ or tests/ (a script or a built program), or a name of PROGRAMS below. A span needs an
argument too (a bare `rnic-perf` names the program). Each one must carry a marker, an HTML comment
(in a man page a comment line `.\\" doc-test...` before it), right before its block or right after its span:

    <!-- doc-test[: OPTIONS] [| why] -->

OPTIONS (words, in any order):
    (none)          run as shown, exit status 0
    by=TEST         the meson test TEST runs this command: TEST must exist (meson test --list) and its
                    command line or source must hold the program with every option of the command and
                    its lower-case words (subcommands, operations); `why` says what differs (a shorter run)
    ci              .ci/run, or a script it runs, holds the command the same way (CI runs it)
    script=NAME     the hidden script NAME (of any document) or the block marked name=NAME holds it (same check) and runs it: a block comment
                        <!-- doc-test-script NAME[: OPTIONS] | why
                        commands...
                        -->
                    for what cannot run as shown (a placeholder, hugepages, a 10-minute run): a reduced
                    but real form, and `why` says why. In a man page the script is comment lines:
                        .\\" doc-test-script NAME[: OPTIONS] | why
                        .\\" command...
                        .\\" -->
    name=NAME       (a block that runs) other markers' script=NAME may point to it
    list            run it with --list added (meson test: lists the tests the command would run)
    dry-run         run it with --dry-run added (the script parses the whole command line, does nothing)
    expect=TEXT     the output must contain TEXT (repeatable; no spaces)
    parallel        each command at once, in the block's order (a server, then its client); all exit 0
    wait=PATH       each next command (parallel), or those after the first started in the background (&),
                    once PATH exists (a server's socket)
    netns           needs root: network namespaces, veths, a private /run
    timeout=N       the bound for the run, seconds (default 120)

A command with no marker fails the test, with its file and line. What runs, runs as shown, but: the tools'
names (rnic-perf, rnicd, ...) are the build's, the word "build" (or "build/" at a word's start) is BUILD_DIR, "/tmp/" is a
directory of this run, and rnic-perf's runs are short: -D is 1 second at most, -n at most 2000, a -a sweep
without -n gets -n 5. As root every run is in a network and mount namespace of its own (unshare) with
/run private, so its namespaces, interfaces, TCP ports, DPDK runtime directories and daemon sockets go
with it; without root what is marked netns is skipped (said so).
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

# Program names a command may start with, and where the build has them (None: the system's).
PROGRAMS = {
    "rnicd": "app/rnicd", "rnic-perf": "app/rnic-perf", "rnic-pingpong": "app/rnic-pingpong",
    "rnic-pktgen": "app/rnic-pktgen", "rnic-baseline": "app/rnic-baseline", "rnic-crcbench": "app/rnic-crcbench",
    "rnic-gatherbench": "app/rnic-gatherbench", "rnic-exporter": "scripts", "fault_matrix": "tests/engine",
    **{f"rnic_{op}_{kind}": "app/rnic-perf" for op in ("write", "read", "send", "atomic") for kind in ("bw", "lat")},
    **{p: None for p in ("meson", "ninja", "tshark", "dpdk-dumpcap", "dpdk-proc-info", "dpdk-telemetry.py",
                         "python3", "bash", "ip", "taskset", "systemctl", "cc", "pkg-config", "kill", "flock",
                         "apt-get", "nm", "perf", "echo", "unshare")},
}
WRAPPERS = ("sudo", "python3", "bash", "exec")
# Options whose value names a file, a runtime directory or an address of the run: a test may use its own.
FREE_VALUES = ("--file-prefix", "--socket", "--config", "--out", "--hist-out", "--out_json_file", "--listen",
               "--pcap", "-w", "-r", "-f")
MARKER = re.compile(r"<!--\s*doc-test(?::\s*(.*?))?\s*-->", re.S)
MAN_MARKER = re.compile(r'^\.\\"\s*doc-test(?::\s*(.*?))?\s*$')
MAN_SCRIPT = re.compile(r'^\.\\"\s*doc-test-script\s+([^\s:]+):?\s*(.*)$')
SCRIPT = re.compile(r"^<!--\s*doc-test-script\s+([^\s:]+):?\s*(.*)$")


class Cmd:
    def __init__(self, path, line, text, kind):
        self.path, self.line, self.text, self.kind = path, line, " ".join(text.split()), kind
        self.opts = None
        self.block = (line, text)   # the commands of one block share a run

    def where(self):
        return f"{self.path}:{self.line}"


def parse_opts(text):
    """{option: [values]} and the why of a marker's text."""
    text, _, why = (text or "").partition("|")
    opts = {}
    for word in text.split():
        key, _, value = word.partition("=")
        opts.setdefault(key, []).append(value)
    return opts, why.strip()


def words(cmd):
    try:
        return shlex.split(cmd, comments=True)
    except ValueError:
        return cmd.split()


def program(cmd):
    """The program a command runs (its base name), or None when it is not a command."""
    w = [x for x in words(cmd) if x]
    while w and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w[0]):
        w.pop(0)
    while len(w) > 1 and w[0] in WRAPPERS and (w[1] in PROGRAMS or "/" in w[1]):
        w.pop(0)
    if not w:
        return None
    first = w[0]
    if first in PROGRAMS:
        return first
    if re.match(r"^(\./)?(build/(app|tests|verbs)/\S+|scripts/\S+\.(sh|py)|tests/\S+\.(sh|py))$", first):
        return os.path.basename(first)
    return None


def required(cmd):
    """What a test must hold to run this command: program, options, lower-case words."""
    prog = program(cmd)
    need = [prog]
    seen, prev = False, ""
    for w in words(cmd):
        if not seen:
            seen = os.path.basename(w) == prog
            continue
        if w.startswith("-") and len(w) > 1 and w != "--":
            need.append(w.split("=", 1)[0])
        elif re.fullmatch(r"[a-z][a-z0-9_]*", w) and prev not in FREE_VALUES:
            need.append(w)
        prev = w
    return need


def has_token(text, token):
    return re.search(r"(?<![\w-])" + re.escape(token) + r"(?![\w-])", text) is not None


def holds(sources, cmdline, cmd):
    """Does a test (its command line and source texts) hold the command? Then None, else what it lacks."""
    need = required(cmd)
    prog, rest = need[0], need[1:]
    if has_token(cmdline, prog):        # the test is given the program: its source uses it by variable
        text = cmdline + "\n" + "\n".join(sources)
        missing = [t for t in rest if not has_token(text, t)]
        return None if not missing else f"lacks {' '.join(missing)}"
    best = None
    for src in sources:
        lines = src.split("\n")
        for i, line in enumerate(lines):
            if not has_token(line, prog):
                continue
            window = "\n".join(lines[max(0, i - 6):i + 7])
            missing = [t for t in rest if not has_token(window, t)]
            if not missing:
                return None
            if best is None or len(missing) < len(best):
                best = missing
    return f"lacks {prog}" if best is None else f"lacks {' '.join(best)} beside {prog}"


# ---------------------------------------------------------------- extraction


def markdown(path, text):
    """(commands, hidden scripts {name: (line, opts, why, lines)}) of a markdown file."""
    lines = text.split("\n")
    cmds, scripts, code = [], {}, set()
    i = 0
    while i < len(lines):
        m = SCRIPT.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].strip() != "-->":
                j += 1
            opts, why = parse_opts(m.group(2))
            scripts[m.group(1)] = (i + 1, opts, why, lines[i + 1:j])
            code.update(range(i, j + 1))
            i = j + 1
            continue
        if lines[i].startswith("```"):
            info = lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            code.update(range(i, j + 1))
            if info in ("", "sh", "bash", "shell", "console"):
                cmds += block(path, lines, i + 1, j, marker_before(lines, i))
            i = j + 1
            continue
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip() or MARKER.fullmatch(lines[i - 1])):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            if not any("`" in ln for ln in lines[i:j]):
                code.update(range(i, j))
                cmds += block(path, [ln[4:] for ln in lines], i, j, marker_before(lines, i))
            i = j
            continue
        i += 1
    cmds += spans(path, lines, code)
    return cmds, scripts


def marker_before(lines, i):
    """The marker on the nearest line above line i (blank lines between), or None."""
    k = i - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    m = MARKER.fullmatch(lines[k].strip()) if k >= 0 else None
    return m.group(1) or "" if m else None


def block(path, lines, start, end, marker):
    """The commands of lines[start:end], continued lines joined; each with the block's marker."""
    out, k, every = [], start, []
    while k < end:
        first, text = k, lines[k]
        while text.endswith("\\") and k + 1 < end:
            k += 1
            text = text[:-1] + " " + lines[k]
        k += 1
        if text.strip():
            every.append(text.strip())
        if program(text.strip()):
            c = Cmd(path, first + 1, text.strip(), "block")
            c.opts, c.raw, c.block = marker, text.strip(), ("block", start)
            out.append(c)
    for c in out:
        c.lines = every     # a block runs whole: its assignments too
    return out


def spans(path, lines, code):
    """The inline code spans that are commands, outside code blocks and comments; each with the marker
    right after it."""
    text = "\n".join("" if n in code else ln for n, ln in enumerate(lines))
    text = re.sub(r"<!--(?!\s*doc-test).*?-->", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    out = []
    for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text):
        body = " ".join(m.group(1).split())
        if len(body.split()) < 2 or not program(body):
            continue
        c = Cmd(path, text.count("\n", 0, m.start()) + 1, body, "span")
        c.raw = body
        after = MARKER.match(text, m.end() + len(text[m.end():]) - len(text[m.end():].lstrip()))
        c.opts = (after.group(1) or "") if after else None
        out.append(c)
    return out


def man(path, text):
    """The commands of a man page's .nf/.fi blocks and its quoted commands, with the comment marker above."""
    lines, out, inside, marker, nf = text.split("\n"), [], False, None, 0
    scripts, hidden = {}, None
    for n, line in enumerate(lines):
        if hidden is not None:
            body = re.sub(r'^\.\\"\s?', "", line)
            if body.strip() == "-->":
                hidden = None
            else:
                scripts[hidden][3].append(body)
            continue
        m = MAN_SCRIPT.match(line)
        if m:
            hidden = m.group(1)
            opts, why = parse_opts(m.group(2))
            scripts[hidden] = (n + 1, opts, why, [])
            continue
        m = MAN_MARKER.match(line)
        if m:
            marker = m.group(1) or ""
            continue
        plain = line.replace("\\-", "-").replace("\\(aq", "'").replace("\\e", "\\")
        if line.startswith(".nf"):
            inside, nf = True, n
        elif line.startswith(".fi"):
            inside, marker = False, None
        elif inside and program(plain):
            c = Cmd(path, n + 1, plain, "man")
            c.opts, c.raw, c.block = marker, plain, ("nf", nf)
            out.append(c)
        elif not inside:
            for q in re.findall(r'"([^"]+)"', plain):
                if len(q.split()) > 1 and program(q):
                    c = Cmd(path, n + 1, q, "man")
                    c.opts, c.raw = marker, q
                    out.append(c)
            if not line.startswith('.\\"'):
                marker = None
    return out, scripts


# ---------------------------------------------------------------- running


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
    cmd = re.sub(r"(^|[\s=])build(?=/|\s|$)", lambda m: m.group(1) + build, cmd)
    return shorten(cmd)


def script(opts, cmds, build, tmp):
    cmds = [rewrite(c, build, tmp) for c in cmds]
    path = ":".join([tmp + "/bin"] + [os.path.join(build, d) for d in sorted({d for d in PROGRAMS.values() if d})])
    # rnic-exporter: the build's copy of the script, which meson install makes executable
    head = (f"mkdir -p {tmp}/bin && printf '#!/bin/sh\\nexec python3 {build}/scripts/rnic-exporter \"$@\"\\n' "
            f"> {tmp}/bin/rnic-exporter && chmod +x {tmp}/bin/rnic-exporter\nexport PATH={shlex.quote(path)}:\"$PATH\"\n"
            # what a failed run left in the background goes with it
            "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
    wait = (opts.get("wait") or [""])[0].replace("/tmp/", tmp + "/")
    until = f"for _ in $(seq 100); do [ -e {shlex.quote(wait)} ] && break; sleep 0.1; done\n" if wait else ""
    if "parallel" not in opts:
        # Each job started (&) must exit 0 too; wait=PATH: the next command once PATH exists (a server's).
        first = next((n for n, c in enumerate(cmds) if re.search(r"&\s*(#.*)?$", c)), 0)
        return (head + "set -e\n" + "\n".join(cmds[:first + 1]) + "\n" + until + "\n".join(cmds[first + 1:])
                + "\nfor j in $(jobs -p); do wait $j; done\n")
    s = head + "pids=()\n"
    for n, c in enumerate(cmds):
        if n > 0:
            s += until
        s += f"{c} &\npids+=($!)\n"
    return s + "rc=0\nfor p in \"${pids[@]}\"; do wait $p || rc=1; done\nexit $rc\n"


def isolated(body):
    """The script in namespaces of its own (root): net, mount, PID; /run private (/run/netns, /var/run/dpdk, a
    daemon's default socket)."""
    setup = ("mount --make-rprivate / && mount -t tmpfs none /run && mkdir -p /run/netns /var/run/dpdk && "
             "ip link set lo up && exec bash -c " + shlex.quote(body))
    # A PID namespace too: whatever the run leaves (a daemon, a timed-out test's children) ends with it, and
    # --kill-child ends it when the run is stopped at its time bound.
    return ["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "bash", "-c", setup]


def run(src, build, where, opts, cmds):
    """Run one marked block, span or hidden script; True when it passed (or was skipped as non-root)."""
    root = os.geteuid() == 0
    if "netns" in opts and not root:
        print(f"skipped {where}: needs root (network namespaces)")
        return True
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        body = script(opts, cmds, os.path.abspath(build), tmp)
        argv = isolated(body) if root else ["bash", "-c", body]
        try:
            p = subprocess.run(argv, cwd=src, capture_output=True, text=True,
                               timeout=int((opts.get("timeout") or ["120"])[0]))
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            rc = "timeout"
            out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
    missing = [t for t in opts.get("expect", []) if t not in out]
    ok = rc == 0 and not missing
    print(f"{'ok' if ok else 'FAIL'} {where}: {len(cmds)} command(s), {time.monotonic() - start:.1f} s" + ("" if rc == 0 else f", exit {rc}")
          + (f", output lacks {missing}" if missing else ""))
    if not ok:
        print("  " + "\n  ".join(body.split("\n")))
        print(out[-6000:])
    return ok


# ---------------------------------------------------------------- the tests that name commands


class Tests:
    """The meson tests of BUILD_DIR: names (meson test --list), command lines and source texts."""

    def __init__(self, src, build):
        self.src, self.build = src, build
        listed = subprocess.run(["meson", "test", "-C", build, "--list", "--no-rebuild"], capture_output=True,
                                text=True, check=True).stdout
        self.names = {ln.split(" / ", 1)[1].strip() for ln in listed.split("\n") if " / " in ln}
        info = json.loads(subprocess.run(["meson", "introspect", build, "--tests"], capture_output=True,
                                         text=True, check=True).stdout)
        targets = json.loads(subprocess.run(["meson", "introspect", build, "--targets"], capture_output=True,
                                            text=True, check=True).stdout)
        sources = {}
        for t in targets:
            for f in t.get("filename", []):
                sources[os.path.realpath(f)] = [s for tsrc in t.get("target_sources", [])
                                                for s in tsrc.get("sources", [])]
        self.tests = {}
        for t in info:
            files = []
            for a in t["cmd"]:
                p = os.path.realpath(a if os.path.isabs(a) else os.path.join(build, a))
                files += sources.get(p, [])
                if os.path.isfile(p) and not os.access(p, os.X_OK) or p.endswith((".sh", ".py")):
                    files.append(p)
                if p.endswith(".py") and os.path.isfile(p):
                    files += local_modules(p)
            cmdline = " ".join(os.path.basename(a) if "/" in a else a for a in t["cmd"])
            self.tests[t["name"]] = (cmdline, [read(f) for f in files if os.path.isfile(f)])

    def check(self, name, cmd):
        if name not in self.names or name not in self.tests:
            return f"no meson test '{name}'"
        why = holds(self.tests[name][1], self.tests[name][0], cmd)
        return None if why is None else f"meson test '{name}' {why}"


def local_modules(path):
    """The modules a Python test imports from its own directory (what it runs may live there)."""
    here = os.path.dirname(path)
    names = re.findall(r"^(?:from|import)\s+(\w+)", read(path), re.M)
    return [os.path.join(here, n + ".py") for n in names if os.path.isfile(os.path.join(here, n + ".py"))]


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def ci_sources(src):
    """.ci/run and the scripts it runs, transitively."""
    todo, texts, seen = [".ci/run"], [], set()
    while todo:
        f = todo.pop()
        if f in seen or not os.path.isfile(os.path.join(src, f)):
            continue
        seen.add(f)
        t = read(os.path.join(src, f))
        texts.append(t)
        todo += re.findall(r"\b(scripts/[\w.-]+\.sh)\b", t)
    return texts


# ---------------------------------------------------------------- main


def documents(src, names):
    if names:
        return names
    found = ["README.md"] + sorted(glob.glob("doc/*.md", root_dir=src)) + sorted(glob.glob("doc/man/*", root_dir=src))
    return [f for f in found if os.path.isfile(os.path.join(src, f))]


def main():
    check_only = sys.argv[1:2] == ["--check"]
    args = sys.argv[1 + check_only:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    src, build = args[0], args[1]
    tests, ci = Tests(src, build), ci_sources(src)
    cmds, scripts = [], {}
    for f in documents(src, args[2:]):
        text = read(os.path.join(src, f))
        found, hidden = man(f, text) if f.startswith("doc/man/") else markdown(f, text)
        cmds += found
        for name, s in hidden.items():
            scripts[name] = (f,) + s
    units, errors, counts, named = {}, [], {"run": 0, "by": 0, "ci": 0, "script": 0}, {}
    for c in sorted(cmds, key=lambda c: "script" in (c.opts or "")):     # named blocks first
        if c.opts is None:
            errors.append(f"{c.where()}: `{c.text}` is run by no test: mark it (tests/docs/doc_commands.py)")
            continue
        opts, why = parse_opts(c.opts)
        kind = next((k for k in ("by", "ci", "script") if k in opts), "run")
        counts[kind] += 1
        err = covered(c, kind, opts, why, tests, ci, scripts, named)
        if err:
            errors.append(f"{c.where()}: `{c.text}`: {err}")
        elif kind == "run":
            run_as = c.raw + (" --list" if "list" in opts else "") + (" --dry-run" if "dry-run" in opts else "")
            unit = units.setdefault(c.block, (c.where(), opts, list(getattr(c, "lines", []))))
            for name in opts.get("name", []):
                named[name] = unit[2]
            if c.kind != "block":
                unit[2].append(run_as)
    for name, (f, line, opts, why, body) in scripts.items():
        if not why:
            errors.append(f"{f}:{line}: doc-test-script {name} needs its why (| ...)")
        units[name] = (f"{f}:{line} ({name})", opts, [ln for ln in join_lines(body) if ln.strip()])
    print(f"{len(cmds)} commands: {len(cmds) - sum(counts.values())} unmarked, {counts['run']} run as shown, {counts['script']} run in a reduced "
          f"form by a hidden script of the documents, {counts['by']} run by a named meson test, {counts['ci']} "
          "by CI (.ci/run)")
    for e in errors:
        print("FAIL " + e)
    passed = failed = 0
    for where, opts, run_cmds in ([] if check_only else units.values()):
        if run(src, build, where, opts, run_cmds):
            passed += 1
        else:
            failed += 1
    print(f"{passed} runs passed, {failed} failed; {len(errors)} commands unmarked or wrongly marked")
    return 1 if failed or errors else 0


def covered(c, kind, opts, why, tests, ci, scripts, named):
    """None when the marker's claim holds (the test, CI or the hidden script holds the command), else why not."""
    if kind in ("by", "script") and not why:
        return "a command not run as shown needs its why (| ...)"
    if kind == "by":
        lacks = [tests.check(t, c.text) for t in opts["by"]]
        return None if None in lacks else "; ".join(lacks)
    if kind == "ci":
        lacks = holds(ci, "", c.text)
        return None if lacks is None else f".ci/run (and what it runs) {lacks}"
    if kind == "script":
        name = opts["script"][0]
        if name not in scripts and name not in named:
            return f"no doc-test-script {name}, no block marked name={name}"
        body = scripts[name][4] if name in scripts else named[name]
        lacks = holds(["\n".join(join_lines(body))], "", c.text)
        return None if lacks is None else f"doc-test-script {name} {lacks}"
    return None


def join_lines(body):
    return "\n".join(body).replace("\\\n", " ").split("\n")


if __name__ == "__main__":
    sys.exit(main())
