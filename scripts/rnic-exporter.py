#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""rnic-exporter: softrnic's counters for Prometheus, in OpenMetrics (or Prometheus text) format over HTTP.

Every scrape of /metrics reads a running engine's DPDK telemetry socket (rnicd, rnic-perf, any program of
the library started with an EAL --file-prefix and telemetry on):
  /rnic/stats,N   device N's counters: softrnic_<name>_total{device=...} (the mlx5 names among them:
                  softrnic_out_of_buffer_total, ...); ring occupancy as gauges (softrnic_<name>)
  /rnic/stages    per-stage latency quantiles in seconds (softrnic_stage_latency_seconds) and message counts
  /rnic/lcores    polling cycles of each engine lcore (softrnic_lcore_busy_cycles_total, ..._idle_...)
  /rnicd/stats    rnicd's clients and objects (softrnic_rnicd_...), when the engine is rnicd's
A scrape when the engine is not there answers 503 and says why; the exporter keeps running.

    rnic-exporter [--file-prefix P | --socket PATH] [--listen HOST:PORT]
"""
import argparse
import json
import re
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "@VERSION@"
MAX_DEVICES = 8
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
# rnicd's numbers that go up and down (the others only count up).
RNICD_GAUGES = {"clients_connected", "qps_live", "cqs_live", "mrs_live", "pds_live", "shared_bytes"}


class Telemetry:
    """One connection to a DPDK telemetry socket (protocol v2: a greeting, then one JSON reply per command)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(5)
        self.sock.connect(path)
        greeting = json.loads(self.sock.recv(1 << 16).decode())
        self.max_len = int(greeting.get("max_output_len", 16384))

    def query(self, cmd):
        self.sock.send(cmd.encode())
        return json.loads(self.sock.recv(self.max_len + 1024).decode()).get(cmd.split(",")[0])

    def close(self):
        self.sock.close()


class Family:
    """A metric family and its samples: (labels dict, value)."""

    def __init__(self, name, kind, help_text):
        self.name, self.kind, self.help, self.samples = name, kind, help_text, []

    def render(self, openmetrics):
        suffix = "_total" if self.kind == "counter" else ""
        head = self.name if openmetrics else self.name + suffix
        lines = [f"# HELP {head} {self.help}", f"# TYPE {head} {self.kind}"]
        for labels, value in self.samples:
            text = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())
            lines.append(f"{self.name}{suffix}{{{text}}} {value}" if text else f"{self.name}{suffix} {value}")
        return lines


def escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def metric_name(text):
    return re.sub(r"[^a-zA-Z0-9_]", "_", text)


class Collector:
    def __init__(self):
        self.families = {}

    def add(self, name, kind, help_text, labels, value):
        fam = self.families.setdefault(name, Family(name, kind, help_text))
        fam.samples.append((labels, value))

    def render(self, openmetrics):
        lines = []
        for fam in self.families.values():
            lines += fam.render(openmetrics)
        if openmetrics:
            lines.append("# EOF")
        return "\n".join(lines) + "\n"


def collect_devices(tel, out):
    for index in range(MAX_DEVICES):
        stats = tel.query(f"/rnic/stats,{index}")
        if not stats:
            break
        for device, counters in stats.items():
            for key, value in counters.items():
                if key.endswith("_used") or key.endswith("_buffered"):
                    out.add(f"softrnic_{metric_name(key)}", "gauge", "softrnic ring occupancy (/rnic/stats)",
                            {"device": device}, value)
                else:
                    out.add(f"softrnic_{metric_name(key)}", "counter", "softrnic device counter (/rnic/stats)",
                            {"device": device}, value)


def collect_stages(tel, out):
    for stage, values in (tel.query("/rnic/stages") or {}).items():
        for kind in ("queued", "busy"):
            if f"{kind}_count" not in values:
                continue
            labels = {"stage": stage, "kind": kind}
            out.add("softrnic_stage_messages", "counter", "messages a stage timed (/rnic/stages)", labels,
                    values[f"{kind}_count"])
            for q, key in (("0.5", "p50_ns"), ("0.99", "p99_ns"), ("0.999", "p999_ns")):
                out.add("softrnic_stage_latency_seconds", "gauge",
                        "per-stage latency quantile since the engine started (/rnic/stages)",
                        dict(labels, quantile=q), values[f"{kind}_{key}"] / 1e9)


def collect_lcores(tel, out):
    for lcore, values in (tel.query("/rnic/lcores") or {}).items():
        labels = {"lcore": lcore.removeprefix("lcore")}
        out.add("softrnic_lcore_busy_cycles", "counter", "TSC cycles of polling loops that found work", labels,
                values["busy_cycles"])
        out.add("softrnic_lcore_idle_cycles", "counter", "TSC cycles of polling loops that found none", labels,
                values["idle_cycles"])


def collect_rnicd(tel, out):
    stats = tel.query("/rnicd/stats")
    for key, value in (stats or {}).items():
        kind = "gauge" if key in RNICD_GAUGES else "counter"
        name = f"softrnic_rnicd_{metric_name(key.removesuffix('_total'))}"
        out.add(name, kind, f"rnicd {key} (/rnicd/stats)", {}, value)


def scrape(path, openmetrics):
    tel = Telemetry(path)
    try:
        out = Collector()
        collect_devices(tel, out)
        collect_stages(tel, out)
        collect_lcores(tel, out)
        collect_rnicd(tel, out)
    finally:
        tel.close()
    return out.render(openmetrics)


def handler_for(path):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.reply(404, "text/plain; charset=utf-8", "rnic-exporter: /metrics only\n")
                return
            openmetrics = "application/openmetrics-text" in self.headers.get("Accept", "")
            try:
                body = scrape(path, openmetrics)
            except (OSError, ValueError) as e:
                self.reply(503, "text/plain; charset=utf-8", f"rnic-exporter: telemetry at {path}: {e}\n")
                return
            self.reply(200, OPENMETRICS if openmetrics else PROMETHEUS_TEXT, body)

        def reply(self, code, ctype, body):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):
            pass    # one line per scrape would fill the log

    return Handler


def main():
    ap = argparse.ArgumentParser(prog="rnic-exporter", description=__doc__.split("\n\n")[0])
    ap.add_argument("--file-prefix", default="rnicd", help="the engine's EAL --file-prefix (default rnicd)")
    ap.add_argument("--socket", help="the telemetry socket's path (default /var/run/dpdk/PREFIX/dpdk_telemetry.v2)")
    ap.add_argument("--listen", default="127.0.0.1:9814", help="HOST:PORT to serve on (default 127.0.0.1:9814; "
                    "port 0: any free port)")
    ap.add_argument("--version", action="version", version=f"rnic-exporter (softrnic) {VERSION}")
    args = ap.parse_args()
    path = args.socket or f"/var/run/dpdk/{args.file_prefix}/dpdk_telemetry.v2"
    host, _, port = args.listen.rpartition(":")
    try:
        server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), handler_for(path))
    except (OSError, ValueError) as e:
        print(f"rnic-exporter: --listen {args.listen}: {e}", file=sys.stderr)
        return 2
    print(f"rnic-exporter: serving http://{server.server_address[0]}:{server.server_address[1]}/metrics "
          f"from {path}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
