#!/usr/bin/python3
"""rnic-exporter while rnic-perf runs: /metrics in OpenMetrics (when asked for it) and in Prometheus text,
each read back by prometheus_client's own parsers (the OpenMetrics one is strict), with the device counters
(softrnic's names and mlx5's), ring gauges, stage latencies and lcore cycles; 404 elsewhere, 503 once the
engine is gone, and the exporter still answers after that.
    exporter.py RNIC_PERF RNIC_EXPORTER
"""
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus


def get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def samples(families):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def main():
    perf, exporter = sys.argv[1], sys.argv[2]
    prefix = f"rnic-exp-{os.getpid()}"
    run = subprocess.Popen([perf, "-o", "read", "-s", "4096", "-D", "4", "--", "-l", "0,1", "--no-huge", "-m", "512",
                            "--no-pci", "--file-prefix", prefix, "--log-level=error"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    exp = subprocess.Popen([sys.executable, exporter, "--file-prefix", prefix, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                           text=True)
    try:
        url = exp.stdout.readline().split()[2]
        assert url.endswith("/metrics"), url
        deadline = time.time() + 30
        while True:     # the engine starts: 503 until its telemetry answers with its devices
            code, _, body = get(url, "application/openmetrics-text; version=1.0.0")
            if code == 200 and 'device="rnic1"' in body:
                break
            assert time.time() < deadline, (code, body)
            time.sleep(0.2)
        time.sleep(1.5)
        code, ctype, body = get(url, "application/openmetrics-text; version=1.0.0")
        assert code == 200 and ctype.startswith("application/openmetrics-text") and body.endswith("# EOF\n"), ctype
        om = samples(parse_openmetrics(body))
        code, ctype, text = get(url)
        assert code == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
        prom = samples(parse_prometheus(text))
        dev0, dev1 = (("device", "rnic0"),), (("device", "rnic1"),)
        for s in (om, prom):
            assert s[("softrnic_tx_packets_total", dev0)] > 0 and s[("softrnic_rx_packets_total", dev1)] > 0
            assert s[("softrnic_rx_read_requests_total", dev1)] > 0
            for mlx5 in ("duplicate_request", "out_of_buffer", "packet_seq_err", "local_ack_timeout_err",
                         "rnr_nak_retry_err", "np_cnp_sent", "rp_cnp_handled", "out_of_sequence"):
                assert (f"softrnic_{mlx5}_total", dev0) in s, mlx5
            assert ("softrnic_doorbell_ring_used", dev0) in s
            assert s[("softrnic_stage_latency_seconds",
                      (("kind", "busy"), ("quantile", "0.5"), ("stage", "responder")))] > 0
            assert any(k[0] == "softrnic_lcore_busy_cycles_total" for k in s)
        assert get(url.replace("/metrics", "/other"))[0] == 404
        run.wait(60)
        assert run.returncode == 0, run.stderr.read()
        code, _, body = get(url)
        assert code == 503 and "telemetry" in body, (code, body)
        assert exp.poll() is None, "the exporter ended with the engine"
    finally:
        for p in (run, exp):
            if p.poll() is None:
                p.kill()
                p.wait()
    print(f"exporter: {len(om)} OpenMetrics samples (strict parser), {len(prom)} in Prometheus text; "
          "404 elsewhere, 503 without the engine")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
