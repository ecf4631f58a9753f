"""PromQL comparison harness (issue 21): the same queries to Prometheus and
to hourglass, over the same samples; every answer must be equal (labels
exactly, values within 1e-9 relative, NaN equal to NaN). Prints each
difference and the score; exits 1 on any difference.

    python3 tests/promql/compare.py --hourglass HOST:PORT --prometheus HOST:PORT \
        --start UNIX_SECONDS [--run 90] [--step 2] [--instants 44,67,90] \
        [--queries tests/promql/queries.txt] [--only SUBSTRING]

START is when tests/promql/exporter.py's phases began. Each query is sent
as a range query over [START, START+RUN] (every STEP seconds) and as an
instant query at START+s for each s of --instants (by default: during
target b's gap, after the api reset and the restarts, and at the end).
In a query, `${T}` is START and `${T+n}` / `${T-n}` is START±n (for `@`);
`${A+n}` is the time (to the millisecond) of target a's first scrape at or
after START+n, to ask at a sample's own timestamp.

A line that starts with `instant: ` is sent as instant queries only: in a
range query Prometheus gathers each step's inner results through a hash map
(rangeEval), so the order in which an outer aggregation meets them is Go's
map order, new at every run, and an order-dependent result (a Welford
stddev over values near 1e15) has no one answer to compare with.

Instant-vector answers are compared as sets unless the query orders them
(`sort`, `sort_desc`: then in order, except among equal values, whose order
is not defined); range answers series by series.
"""

import argparse
import concurrent.futures
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def get(base, path, params):
    url = f"http://{base}{path}?{urllib.parse.urlencode(params)}"
    for attempt in range(3):
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            try:
                return json.load(e)
            except ValueError:
                return {"status": "error", "errorType": f"http {e.code}", "error": ""}
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            if attempt == 2:
                return {"status": "error", "errorType": "harness", "error": str(e)}
            time.sleep(0.5)


def normalised(answer, ordered):
    if answer.get("status") != "success":
        return ("error", answer.get("errorType"), answer.get("error", ""))
    kind, result = answer["data"]["resultType"], answer["data"]["result"]
    if kind in ("scalar", "string"):
        return (kind, result[0], result[1])
    key = lambda x: json.dumps(x["metric"], sort_keys=True)
    if kind == "vector":
        rows = [(key(x), x["value"][0], x["value"][1]) for x in result]
        return (kind, ties_sorted(rows) if ordered else sorted(rows))
    return (kind, sorted((key(x), tuple((v[0], v[1]) for v in x["values"])) for x in result))


def ties_sorted(rows):
    """An ordered answer with each run of equal values (ties, NaN among
    them) sorted by labels: the order among ties is not defined."""
    out, run = [], []
    for row in rows:
        if run and not equal(run[-1][2], row[2]):
            out += sorted(run)
            run = []
        run.append(row)
    return out + sorted(run)


def equal(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, str):
        try:
            x, y = float(a), float(b)
        except ValueError:
            return a == b
        return (math.isnan(x) and math.isnan(y)) or x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))
    return a == b


def same(mine, theirs):
    if mine[0] == "error" and theirs[0] == "error":
        return True
    return equal(mine, theirs)


def explain(mine, theirs, t0):
    """Where two unequal answers part, in a few lines (times as T+seconds)."""
    rel = lambda ts: f"T{float(ts) - t0:+g}"
    if mine[0] != theirs[0] or mine[0] in ("error", "scalar", "string"):
        return [f"hourglass:  {str(mine)[:300]}", f"prometheus: {str(theirs)[:300]}"]
    out = []
    if mine[0] == "vector":
        if [r[0] for r in mine[1]] == [r[0] for r in theirs[1]]:
            for (k, ts, x), (_, _, y) in zip(mine[1], theirs[1]):
                if not equal(x, y):
                    out.append(f"{k} @{rel(ts)}: hourglass {x}, prometheus {y}")
        else:
            a, b = [r[0] for r in mine[1]], [r[0] for r in theirs[1]]
            sa, sb = set(a), set(b)
            for k in sorted(sa - sb):
                out.append(f"only hourglass:  {k} = {dict((r[0], r[2]) for r in mine[1])[k]}")
            for k in sorted(sb - sa):
                out.append(f"only prometheus: {k} = {dict((r[0], r[2]) for r in theirs[1])[k]}")
            if sa == sb:
                out.append(f"order: hourglass {a}")
                out.append(f"       prometheus {b}")
            else:
                vm, vt = {r[0]: r[2] for r in mine[1]}, {r[0]: r[2] for r in theirs[1]}
                for k in sorted(sa & sb):
                    if not equal(vm[k], vt[k]):
                        out.append(f"{k}: hourglass {vm[k]}, prometheus {vt[k]}")
    else:
        m, t = dict(mine[1]), dict(theirs[1])
        for k in sorted(set(m) - set(t)):
            out.append(f"only hourglass:  {k} ({len(m[k])} points from {rel(m[k][0][0])})")
        for k in sorted(set(t) - set(m)):
            out.append(f"only prometheus: {k} ({len(t[k])} points from {rel(t[k][0][0])})")
        for k in sorted(set(m) & set(t)):
            pm, pt = dict(m[k]), dict(t[k])
            bad = [ts for ts in sorted(set(pm) | set(pt), key=float)
                   if ts not in pm or ts not in pt or not equal(pm[ts], pt[ts])]
            if bad:
                shown = ", ".join(f"{rel(ts)} {pm.get(ts, '-')}/{pt.get(ts, '-')}" for ts in bad[:4])
                out.append(f"{k}: {len(bad)} points differ (hourglass/prometheus): {shown}")
    if len(out) > 8:
        out = out[:8] + [f"… {len(out) - 8} more"]
    return out or [f"hourglass:  {str(mine)[:300]}", f"prometheus: {str(theirs)[:300]}"]


def expand(q, t0, scrapes=()):
    """`${T+n}`: START+n; `${A+n}`: the time of target a's first scrape at or
    after START+n (to ask at a sample's own millisecond)."""
    def start(m):
        return str(t0 + int(m.group(1) or 0))

    def scrape(m):
        at = t0 + int(m.group(1) or 0)
        return "%.3f" % next((x for x in scrapes if x >= at), at)
    return re.sub(r"\$\{A([+-]\d+)?\}", scrape, re.sub(r"\$\{T([+-]\d+)?\}", start, q))


def scrape_times(args, t0, end):
    """When Prometheus scraped target a, from START to END (seconds)."""
    q = {"query": f'hg_balance{{instance="a"}}[{end - t0 + 5}s]', "time": end + 1}
    answer = get(args.prometheus, "/api/v1/query", q)
    result = answer.get("data", {}).get("result", [])
    return sorted(float(v[0]) for v in result[0]["values"]) if result else []


def settle(args, t0, end):
    """Wait (up to 20 s) until hourglass has every `up` sample Prometheus has."""
    q = {"query": f"sum by (job, instance) (count_over_time(up[{end - t0 + 10}s]))", "time": end + 1}
    for _ in range(40):
        a = normalised(get(args.hourglass, "/api/v1/query", q), False)
        b = normalised(get(args.prometheus, "/api/v1/query", q), False)
        if equal(a, b):
            return
        time.sleep(0.5)
    print(f"warning: hourglass has not caught up with Prometheus:\n  {a}\n  {b}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hourglass", required=True)
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--queries", default="tests/promql/queries.txt")
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--run", type=int, default=90)
    ap.add_argument("--step", type=int, default=2)
    ap.add_argument("--instants", default="44,67,90")
    ap.add_argument("--only", help="only the queries containing this")
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()
    with open(args.queries, encoding="utf-8") as f:
        queries = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    if args.only:
        queries = [q for q in queries if args.only in q]
    t0, end = args.start, args.start + args.run
    settle(args, t0, end)
    instants = [int(s) for s in args.instants.split(",")]

    scrapes = scrape_times(args, t0, end) if any("${A" in q for q in queries) else []
    checks = []
    for line in queries:
        instant_only = line.startswith("instant: ")
        q = line.removeprefix("instant: ")
        sent = expand(q, t0, scrapes)
        ordered = q.startswith("sort")
        if not instant_only:
            checks.append((q, f"range T+0..{args.run}/{args.step}", "/api/v1/query_range",
                           {"query": sent, "start": t0, "end": end, "step": args.step}, ordered))
        for s in instants:
            checks.append((q, f"instant T+{s}", "/api/v1/query", {"query": sent, "time": t0 + s}, ordered))

    def run(check):
        q, label, path, params, ordered = check
        mine = normalised(get(args.hourglass, path, params), ordered)
        theirs = normalised(get(args.prometheus, path, params), ordered)
        return check, mine, theirs

    began = time.time()
    equal_answers = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for (q, label, _, _, _), mine, theirs in pool.map(run, checks):
            if same(mine, theirs):
                equal_answers += 1
            else:
                print(f"DIFF {label}: {q}")
                for line in explain(mine, theirs, t0):
                    print(f"  {line}")
    print(f"PromQL against Prometheus: {equal_answers}/{len(checks)} answers equal "
          f"({len(queries)} queries, each as a range query and {len(instants)} instant queries, "
          f"{sum(q.startswith('instant: ') for q in queries)} of them as instant queries only; "
          f"{time.time() - began:.0f} s)")
    return 0 if equal_answers == len(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
