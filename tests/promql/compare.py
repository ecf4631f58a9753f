"""PromQL comparison harness (issue 21): the same queries to Prometheus and
to hourglass, over the same samples, each as an instant query and as a range
query; every answer must be equal (labels exactly, values within 1e-9
relative, NaN equal to NaN). Prints each difference and the score; exits 1
on any difference.

    python3 tests/promql/compare.py --hourglass HOST:PORT --prometheus HOST:PORT \
        [--queries tests/promql/queries.txt] [--at UNIX_SECONDS] [--range 30] [--step 5]

`--at` defaults to 20 s ago, so that every sample before it has reached both.
Instant-vector answers are compared as sets unless the query orders them
(`sort`, `sort_desc`); range answers series by series.
"""

import argparse
import json
import math
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def get(base, path, params):
    url = f"http://{base}{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def normalised(answer, ordered):
    if answer.get("status") != "success":
        return ("error", answer.get("errorType"))
    kind, result = answer["data"]["resultType"], answer["data"]["result"]
    if kind in ("scalar", "string"):
        return (kind, result[0], result[1])
    key = lambda x: json.dumps(x["metric"], sort_keys=True)
    if kind == "vector":
        rows = [(key(x), x["value"][0], x["value"][1]) for x in result]
        return (kind, rows if ordered else sorted(rows))
    return (kind, sorted((key(x), tuple((v[0], v[1]) for v in x["values"])) for x in result))


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hourglass", required=True)
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--queries", default="tests/promql/queries.txt")
    ap.add_argument("--at", type=int, default=int(time.time()) - 20)
    ap.add_argument("--range", type=int, default=30)
    ap.add_argument("--step", type=int, default=5)
    args = ap.parse_args()
    with open(args.queries, encoding="utf-8") as f:
        queries = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    t = args.at
    checks = same = 0
    for q in queries:
        ordered = q.startswith("sort")
        for kind, path, params in (
            ("instant", "/api/v1/query", {"query": q, "time": t}),
            ("range", "/api/v1/query_range",
             {"query": q, "start": t - args.range, "end": t, "step": args.step}),
        ):
            checks += 1
            mine = normalised(get(args.hourglass, path, params), ordered)
            theirs = normalised(get(args.prometheus, path, params), ordered)
            if mine[0] == "error" and theirs[0] == "error":
                same += 1
            elif equal(mine, theirs):
                same += 1
            else:
                print(f"DIFF {kind} {q}\n  hourglass:  {str(mine)[:400]}\n  prometheus: {str(theirs)[:400]}")
    print(f"PromQL against Prometheus: {same}/{checks} answers equal ({len(queries)} queries, instant and range)")
    return 0 if same == checks else 1


if __name__ == "__main__":
    sys.exit(main())
