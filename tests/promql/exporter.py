#!/usr/bin/env python3
"""Purpose-made scrape targets for the PromQL comparison (issue 21).

Two HTTP targets (two ports; Prometheus labels them instance="a" and
instance="b") serve the Prometheus text format 0.0.4. What they serve is a
function of the seconds since START (given, unix seconds), so that the phases
below line up with the times compare.py asks about:

    s  0      target a up, everything present; target b answers 500 until a
              second after a's first scrape (and s 3), then shows its series
    s 20      hg_ratio{kind="nan"} is NaN until s 60;  job "delta" runs until 30
    s 25      job "alpha" stops (its series disappear: staleness markers)
    s 30      hg_ratio{kind="posinf"} is +Inf until s 70
    s 35      target b answers 500 until s 50 (up=0, staleness markers for all
              of b's series: a gap); its counters go on counting meanwhile
    s 40      job "gamma" appears (late series)
    s 45      job "alpha" restarts (its counter starts again from 0);
              /api gets slower (the latency histogram's distribution moves)
    s 50      target b is back; hg_late_total appears on a
    s 50      hg_ratio{kind="neginf"} is -Inf from here to the end
    s 60      service "api" on target a restarts: its counters and its latency
              histogram RESET to 0
    s 65      job "beta" stops for good
    s 75      hg_bytes_total{dir="rx"} on a resets (to a small non-zero value)
    s 90      end of the compared window (the targets keep serving)

Values are floats that differ between all series of one metric (and between
a and b), so that topk/bottomk/sort never meet a tie.

    python3 tests/promql/exporter.py --start UNIX_SECONDS [--ports A,B] --ports-file FILE

writes "PORT_A PORT_B" to FILE once both listen.
"""

import argparse
import http.server
import math
import os
import socketserver
import sys
import threading
import time

DOWN = (35.0, 50.0)  # target b answers 500 in [35, 50)

# hg_requests_total{service, code, method}: requests per second on target a
REQUESTS = [
    ("api", "200", "GET", 12.5),
    ("api", "200", "POST", 3.25),
    ("api", "404", "GET", 0.75),
    ("api", "500", "POST", 0.3),
    ("web", "200", "GET", 20.1),
    ("web", "304", "GET", 5.6),
    ("web", "500", "GET", 0.15),
    ("auth", "200", "POST", 2.2),
    ("auth", "401", "POST", 0.9),
]
API_RESTART = 60.0  # service "api" on target a restarts

LE = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"]
# handler: observations per second, cumulative fractions per bucket, mean
# seconds; "/api" moves to the second distribution at s 45.
HIST = {
    "/api": (40.0, [0.02, 0.08, 0.25, 0.5, 0.75, 0.9, 0.96, 0.99, 0.999, 1.0], 0.08,
             [0.01, 0.02, 0.05, 0.15, 0.35, 0.6, 0.8, 0.93, 0.99, 1.0], 0.21),
    "/login": (6.0, [0.0, 0.01, 0.03, 0.1, 0.3, 0.6, 0.85, 0.97, 1.0, 1.0], 0.35, None, None),
    "/static": (90.0, [0.3, 0.6, 0.85, 0.95, 0.99, 0.999, 1.0, 1.0, 1.0, 1.0], 0.012, None, None),
    "/idle": (0.0, [0.0] * 10, 0.0, None, None),
}
HIST_SHIFT = 45.0

# job_id: (runs as [from, to) intervals, counter rate, progress base)
JOBS = {
    "alpha": ([(0.0, 25.0), (45.0, 1e9)], 3.3, 0.11),
    "beta": ([(0.0, 65.0)], 7.1, 0.23),
    "gamma": ([(40.0, 1e9)], 1.9, 0.37),
    "delta": ([(20.0, 30.0)], 11.7, 0.49),
}


def fmt(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def escape(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def tri(s, period, lo, hi):
    """Integer triangle wave between lo and hi."""
    x = (s % period) / period
    return float(int(lo + (hi - lo) * (2 * x if x < 0.5 else 2 - 2 * x)))


def counter(rate, since):
    """A counter started at `since` seconds ago: monotone, with a wobble."""
    if since <= 0:
        return 0.0
    return rate * since + 0.3 * rate * math.sin(since / 7.0)


class Exposition:
    """Collects samples; text() gives them sorted by label set (as Prometheus
    sorts labels), so that the series Prometheus creates on the first scrape
    are created in label order: Prometheus 2.42 evaluates a selector's series
    in creation order, and label order is the one order hourglass can follow.
    Then sums and means, whose last bits depend on the order, are comparable."""

    def __init__(self, target):
        self.target = target
        self.samples = []
        self.kinds = {}

    def add(self, name, kind, labels, value):
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if kind in ("histogram", "summary") and name.endswith(suffix):
                family = name[: -len(suffix)]
        self.kinds.setdefault(family, kind)
        full = dict(labels, __name__=name, instance=self.target, job="hg")
        self.samples.append((sorted(full.items()), family, name, labels, value))

    def text(self):
        lines, seen = [], set()
        for _, family, name, labels, value in sorted(self.samples, key=lambda x: x[0]):
            if family not in seen:
                seen.add(family)
                lines.append(f"# HELP {family} Made for the PromQL comparison.")
                lines.append(f"# TYPE {family} {self.kinds[family]}")
            text = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())
            lines.append(f"{name}{{{text}}} {fmt(value)}" if text else f"{name} {fmt(value)}")
        return "\n".join(lines) + "\n"


def exposition(target, s):
    """What target ("a" or "b") shows s seconds after the start."""
    e = Exposition(target)
    b = target == "b"

    # Counters with three label dimensions; a's "api" restarts at s 60.
    for service, code, method, rate in REQUESTS:
        r = rate * 1.5 + 0.1 if b else rate
        since = s - API_RESTART if (not b and service == "api" and s >= API_RESTART) else s
        e.add("hg_requests_total", "counter",
              {"service": service, "code": code, "method": method}, counter(r, since))

    # Bytes: rx on a resets at s 75 to a small non-zero value.
    for direction, rate in (("rx", 812.5), ("tx", 301.25)):
        r = rate * 1.25 if b else rate
        v = counter(r, s)
        if not b and direction == "rx" and s >= 75.0:
            v = 1234.5 + counter(r, s - 75.0)
        e.add("hg_bytes_total", "counter", {"dir": direction}, v)

    # A counter that appears only late (on a, from s 50).
    if not b and s >= 50.0:
        e.add("hg_late_total", "counter", {"kind": "late"}, counter(4.4, s - 50.0))

    # Gauges going up and down; the cellar goes below zero; the garage falls.
    off = 0.37 if b else 0.0
    temps = {
        "kitchen": 21.3 + 2.1 * math.sin(2 * math.pi * s / 40.0),
        "attic": 30.7 + 4.4 * math.sin(2 * math.pi * s / 55.0 + 1.0),
        "cellar": -2.1 + 3.3 * math.sin(2 * math.pi * s / 30.0 + 2.0),
        "garage": 8.9 - 0.13 * s,
    }
    for room, v in temps.items():
        e.add("hg_temperature_celsius", "gauge", {"room": room}, v + off)

    # Integer queue depths in disjoint ranges; b's are +0.5.
    depths = {"q1": tri(s, 20.0, 0, 10), "q2": 20 + tri(s, 16.0, 0, 20), "q3": 100 + tri(s, 36.0, 0, 50)}
    for queue, v in depths.items():
        e.add("hg_queue_depth", "gauge", {"queue": queue}, v + (0.5 if b else 0.0))

    # Large and small magnitudes, and a balance that goes negative.
    e.add("hg_magnitude", "gauge", {"kind": "large"}, 1.5e15 + 1000.125 * s + (7e5 if b else 0.0))
    e.add("hg_magnitude", "gauge", {"kind": "small"}, 3.7e-7 * (1.5 + math.sin(s / 5.0)) * (1.1 if b else 1.0))
    e.add("hg_balance", "gauge", {"account": "x"}, -50.0 + 30.0 * math.sin(s / 9.0) - (3.3 if b else 0.0))

    # Non-finite values on a, for part of the run.
    if not b:
        e.add("hg_ratio", "gauge", {"kind": "nan"}, math.nan if 20.0 <= s < 60.0 else 0.25 + 0.01 * s)
        e.add("hg_ratio", "gauge", {"kind": "posinf"}, math.inf if 30.0 <= s < 70.0 else 2.5 + 0.001 * s)
        e.add("hg_ratio", "gauge", {"kind": "neginf"}, -math.inf if s >= 50.0 else -1.5 - 0.001 * s)
        e.add("hg_ratio", "gauge", {"kind": "normal"}, 0.75 + 0.1 * math.sin(s / 4.0))

    # Label values that need escaping (in the text format, and in OpenTSDB's
    # names: %, non-ASCII, quotes, backslash, newline, colon, space), and a
    # metric name with colons (a recording rule's).
    for i, text in enumerate(("50%25 off", "caf\u00e9 \u2615", 'a "quoted" \\ back\nline', "h:9100/x y")):
        e.add("hg_escape_info", "gauge", {"text": text}, 1.5 + i + (10.0 if b else 0.0))
    e.add("hg:colon:ratio", "gauge", {"kind": "recorded"}, 0.5 + 0.25 * math.cos(s / 8.0) + (1.0 if b else 0.0))

    # Static information to join on.
    e.add("hg_info", "gauge", {"version": "1.5.0" if b else "1.4.2", "region": "eu" if b else "us"}, 1.0)
    for service, cap in (("api", 100.0), ("web", 250.0), ("auth", 40.0)):
        e.add("hg_capacity", "gauge", {"service": service}, cap * (2.0 if b else 1.0) + (0.5 if b else 0.0))

    # A classic histogram; a's /api resets with the api service at s 60.
    for handler, (rate, f1, m1, f2, m2) in HIST.items():
        r = rate * 1.3 if b else rate
        start = API_RESTART if (not b and handler == "/api" and s >= API_RESTART) else 0.0
        t1 = max(0.0, min(s, HIST_SHIFT) - start)
        t2 = max(0.0, s - max(HIST_SHIFT, start)) if f2 else 0.0
        if not f2:
            t1 = max(0.0, s - start)
        for i, le in enumerate(LE):
            n = r * t1 * f1[i] + (r * t2 * f2[i] if f2 else 0.0)
            e.add("hg_latency_seconds_bucket", "histogram", {"handler": handler, "le": le}, float(math.floor(n)))
        total = float(math.floor(r * t1 + (r * t2 if f2 else 0.0)))
        e.add("hg_latency_seconds_sum", "histogram", {"handler": handler}, r * t1 * m1 + (r * t2 * m2 if f2 else 0.0))
        e.add("hg_latency_seconds_count", "histogram", {"handler": handler}, total)

    # A summary; "idle" has no observations, so its quantiles are NaN.
    for service, scale, rate in (("api", 0.05, 40.0), ("db", 0.013, 170.0), ("idle", 0.0, 0.0)):
        r = rate * 1.2 if b else rate
        for q, mult in (("0.5", 1.0), ("0.9", 2.7), ("0.99", 6.1)):
            v = math.nan if r == 0 else scale * mult * (1.0 + 0.2 * math.sin(s / 6.0 + mult)) * (1.07 if b else 1.0)
            e.add("hg_rpc_duration_seconds", "summary", {"service": service, "quantile": q}, v)
        e.add("hg_rpc_duration_seconds_sum", "summary", {"service": service}, r * s * scale * 1.3)
        e.add("hg_rpc_duration_seconds_count", "summary", {"service": service}, float(math.floor(r * s)))

    # Jobs that stop, restart, run late or only briefly (on a only).
    if not b:
        for job, (runs, rate, base) in JOBS.items():
            for lo, hi in runs:
                if lo <= s < hi:
                    e.add("hg_job_running", "gauge", {"job_id": job}, 1.0)
                    e.add("hg_job_progress_ratio", "gauge", {"job_id": job}, base + 0.0071 * (s - lo))
                    e.add("hg_job_processed_total", "counter", {"job_id": job}, counter(rate, s - lo))
                    e.add("hg_job_start_time_seconds", "gauge", {"job_id": job}, START + lo)

    return e.text()


START = 0.0
FIRST_A = []  # when target a was first scraped


class Handler(http.server.BaseHTTPRequestHandler):
    target = "a"

    def do_GET(self):
        now = time.time()
        s = now - START
        if self.target == "a" and not FIRST_A:
            FIRST_A.append(now)
        if self.target == "b":
            # b comes up a second after a's first scrape (so that a's series
            # are created first, in label order), and is down for the gap.
            if not FIRST_A or now - FIRST_A[0] < 1.0 or s < 3.0:
                self.send_error(500, "target b is not up yet")
                return
            if DOWN[0] <= s < DOWN[1]:
                self.send_error(500, "target b is down for the gap")
                return
        body = exposition(self.target, s).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    global START
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", type=float, default=time.time())
    ap.add_argument("--ports", default="0,0", help="the ports of a and b (0: any free one)")
    ap.add_argument("--ports-file", required=True)
    ap.add_argument("--dump", type=float, help="print what a and b show at this second and exit")
    args = ap.parse_args()
    START = args.start
    if args.dump is not None:
        sys.stdout.write(exposition("a", args.dump) + exposition("b", args.dump))
        return 0
    servers = []
    for target, port in zip(("a", "b"), (int(p) for p in args.ports.split(","))):
        handler = type(f"Handler_{target}", (Handler,), {"target": target})
        srv = Server(("127.0.0.1", port), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    with open(args.ports_file + ".tmp", "w") as f:
        f.write(" ".join(str(srv.server_address[1]) for srv in servers) + "\n")
    os.replace(args.ports_file + ".tmp", args.ports_file)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
