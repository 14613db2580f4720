"""scripts/cost_model.py measuring: one short run of each of its six cases (64 B and 4 KB WRITE, 1 QP and
1024 QPs, stage maps `one` and `host`) with this build's rnic-perf; every case measured and predicted, the
four 100 Gb/s predictions and the check line present; the saved run (--save) models to the same lines
(--data). The error is printed, not judged: a run this short on
a shared machine is noise (the 15 % check is the canned test's and doc/performance.md's full run's).
    cost_model_live.py COST_MODEL_PY BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

script, build = sys.argv[1:3]
tmp = tempfile.TemporaryDirectory()
saved = os.path.join(tmp.name, "run.json")
p = subprocess.run([sys.executable, script, "--build", build, "--seconds", "0.3", "--qps", "1024", "--repeat", "1",
                    "--save", saved], capture_output=True, text=True, timeout=150)
if p.returncode not in (0, 1):     # 1: a case outside the tolerance, said on the check line
    raise SystemExit(f"FAIL: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
out = [json.loads(ln) for ln in p.stdout.splitlines()]
cases = [x for x in out if "case" in x]
assert len(cases) == 6 and {c["map"] for c in cases} == {"one", "host"}, cases
for c in cases:
    assert c["measured_mpps"] > 0 and c["predicted_mpps"] > 0, c
preds = [x for x in out if "predict" in x]
assert len(preds) == 4 and all(x["requester_end"]["lcores"] > 0 and x["responder_end"]["lcores"] > 0
                               for x in preds), preds
assert "check" in out[-1] and out[-1]["pass"] == (p.returncode == 0), out[-1]
again = subprocess.run([sys.executable, script, "--data", saved], capture_output=True, text=True, timeout=60)
assert again.stdout == p.stdout and again.returncode == p.returncode, again.stdout
print("\n".join(json.dumps(c) for c in cases + preds + [out[-1]]))
