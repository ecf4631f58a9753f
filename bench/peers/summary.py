#!/usr/bin/env python3
"""Summarises a side-by-side run (bench/peers/side-by-side.sh, or bench/ab.sh's
build against build): for each
ingest path and each query, the median over runs with min-max, as Markdown.

    python3 bench/peers/summary.py OUT_DIR
"""
import glob
import json
import os
import re
import statistics
import sys


def fmt_range(values, fmt):
    if not values:
        return "–"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt(med)
    return f"{fmt(med)} ({fmt(min(values))}–{fmt(max(values))})"


def mpts(v):
    return f"{v / 1e6:.2f} M"


def ms(v):
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.0f}"


def load(path):
    """A report, or None (with a warning) for one cut short."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"(skipped {os.path.basename(path)}: {e})", file=sys.stderr)
        return None


def main(out):
    ingest = {}  # name -> list of reports
    for path in sorted(glob.glob(os.path.join(out, "run*-ingest-*.json"))):
        name = re.sub(r"^run\d+-ingest-", "", os.path.basename(path))[:-5]
        rep = load(path)
        if rep is not None:
            ingest.setdefault(name, []).append(rep)
    query_files = sorted(glob.glob(os.path.join(out, "run*-query*.json")))
    runs = len({re.match(r"run(\d+)-", os.path.basename(p)).group(1) for p in query_files})
    print(f"## Ingest ({max((len(v) for v in ingest.values()), default=0)} runs; "
          "median (min–max))\n")
    print("| server and path | points/s | server CPU µs/point | peak RSS MiB | errors |")
    print("|---|---|---|---|---|")
    for name, reps in sorted(ingest.items()):
        pps = [r["points_per_sec"] for r in reps if r.get("points_per_sec")]
        cpu = [r["server"]["cpu_us_per_point"] for r in reps
               if r.get("server") and r["server"].get("cpu_us_per_point") is not None]
        rss = [r["server"]["peak_rss_bytes"] / 2**20 for r in reps
               if r.get("server") and r["server"].get("peak_rss_bytes")]
        errs = sum(r.get("errors", 0) + r.get("points_refused", 0) for r in reps)
        print(f"| {name} | {fmt_range(pps, mpts)} | {fmt_range(cpu, lambda v: f'{v:.2f}')} "
              f"| {fmt_range(rss, lambda v: f'{v:.0f}')} | {errs} |")
    queries = {}  # (query, kind) -> [p50 per run], checks
    checks = {}
    for path in query_files:
        rep = load(path)
        if rep is None:
            continue
        # run<N>-query-<label>.json: one server of several of a kind (A/B).
        label = re.match(r"run\d+-query-(.+)\.json$", os.path.basename(path))
        for res in rep["results"]:
            kind = label.group(1) if label else re.split(r"[=/]", res["target"])[0]
            key = (res["query"], kind)
            queries.setdefault(key, []).append(res["p50_ms"])
            c = checks.setdefault(key, [0, 0, 0])
            c[0] += res["answers"]
            c[1] += res["wrong_answers"]
            c[2] += res["failures"]
    if not queries:
        return
    kinds = []
    for (_, k) in queries:
        if k not in kinds:
            kinds.append(k)
    names = []
    for (q, _) in queries:
        if q not in names:
            names.append(q)
    print(f"\n## Queries (p50 of each run's timed runs in ms; median (min–max) over {runs} runs)\n")
    print("| query | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for q in names:
        cells = []
        for k in kinds:
            vals = queries.get((q, k), [])
            answers, wrong, failed = checks.get((q, k), (0, 0, 0))
            mark = "" if wrong == 0 and failed == 0 and answers > 0 else \
                f" ({wrong} wrong, {failed} failed of {answers})"
            cells.append(fmt_range(vals, ms) + mark)
        print(f"| {q} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
