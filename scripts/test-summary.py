#!/usr/bin/python3
"""Summarise meson test runs (their meson-logs/testlog.json) as the plain line 'N passed, N failed', the last
line (skipped tests are named and counted on the lines before it).

A cmocka executable counts as the number of cmocka test cases it ran; every other test (oracle scripts,
expected-failure argument checks) counts as one. A test meson saw fail counts at least one failure, even
when it crashed before cmocka could report. Each failed test's output ends with its last lines, so a
failure in CI, where the build tree is gone afterwards, can be diagnosed from the log alone.
"""
import json
import re
import sys

CMOCKA_PASSED = re.compile(r"^\[  PASSED  \] (\d+) test\(s\)\.", re.M)
CMOCKA_FAILED = re.compile(r"^\[  FAILED  \] (\d+) test\(s\), listed below:", re.M)
CASE_COUNT = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)
OK_RESULTS = {"OK", "EXPECTEDFAIL"}
TAIL_LINES = 40


def count(entry):
    if entry["result"] == "SKIP":
        return 0, 0  # e.g. the veth test where network namespaces cannot be made
    out = (entry.get("stdout") or "") + (entry.get("stderr") or "")
    ok = entry["result"] in OK_RESULTS
    passed = sum(int(n) for n in CMOCKA_PASSED.findall(out))
    failed = sum(int(n) for n in CMOCKA_FAILED.findall(out))
    for p, f in CASE_COUNT.findall(out):	# scripts that report their own cases
        passed += int(p)
        failed += int(f)
    if passed == 0 and failed == 0:
        return (1, 0) if ok else (0, 1)
    if not ok and failed == 0:
        failed = 1
    return passed, failed


def main():
    logs = sys.argv[1:] or ["meson-logs/testlog.json"]
    passed = failed = 0
    failures, skipped = [], []
    for log in logs:
        with open(log) as f:
            for line in f:
                if not line.strip():
                    continue
                entry = json.loads(line)
                if entry["result"] == "SKIP":
                    skipped.append(f'{log}: {entry["name"]}')
                p, fl = count(entry)
                passed += p
                failed += fl
                if fl:
                    failures.append((f'{log}: {entry["name"]} ({entry["result"]})', entry))
    for name in skipped:
        print(f"skipped: {name}")
    for name, entry in failures:
        out = ((entry.get("stdout") or "") + (entry.get("stderr") or "")).splitlines()
        print(f"--- the last {min(len(out), TAIL_LINES)} lines of {name}")
        for line in out[-TAIL_LINES:]:
            print(f"    {line}")
    for name, _ in failures:
        print(f"failed: {name}")
    if skipped:
        print(f"{len(skipped)} skipped")
    # The last line is exactly 'N passed, N failed': .ci/run and CI read it so.
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
