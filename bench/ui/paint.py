"""Timings of the web UI's pages in headless Chromium, cold: each run is a
new browser with an empty profile (no cached files). Run by bench/ui.sh
against a server that holds the cpu workload (100 hosts, the last 24 h).

For each page: first paint and first contentful paint (the browser's paint
timing), the first paint of a second visit in the same browser (warm: the
files revalidated), the `/api/query` time as the browser saw it, and when
the chart was drawn (`hourglass:chart-drawn`, marked by chart.js), all in
ms from the start of navigation; the median and the range over the runs.
A plain-text file from the same server gives the browser's own floor.
"""

import argparse
import statistics
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

PAGES = [
    ("empty query page", "/", None),
    ("1 h of 100 series (36 k points)", "/#start=1h-ago&m=sum:cpu.usage_user{hostname=*}", "chart"),
    ("24 h of 100 series, 5m-avg (29 k points)",
     "/#start=24h-ago&m=sum:5m-avg:cpu.usage_user{hostname=*}", "chart"),
    ("24 h of 100 series, raw (864 k points)", "/#start=24h-ago&m=sum:cpu.usage_user{hostname=*}", "chart"),
    ("explore: 10 metrics", "/#page=explore", "explore"),
    ("status", "/#page=status", "status"),
]

READY = {
    "chart": "return performance.getEntriesByName('hourglass:chart-drawn').length > 0",
    "explore": "return document.querySelectorAll('#explore-metrics tr[data-metric]').length >= 10",
    "status": "return document.querySelectorAll('#status-storage tr').length > 0",
}

TIMINGS = """
const paint = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
const queries = performance.getEntriesByType('resource').filter(e => e.name.includes('/api/query'));
const drawn = performance.getEntriesByName('hourglass:chart-drawn');
const nav = performance.getEntriesByType('navigation')[0];
const bytes = performance.getEntriesByType('resource').filter(e => e.name.includes('/ui/'))
  .reduce((n, e) => n + e.transferSize, nav ? nav.transferSize : 0);
return {
  fp: paint['first-paint'], fcp: paint['first-contentful-paint'],
  query: queries.length ? Math.max(...queries.map(e => e.responseEnd - e.startTime)) : null,
  query_bytes: queries.reduce((n, e) => n + e.encodedBodySize, 0),
  drawn: drawn.length ? drawn[0].startTime : null,
  ready: performance.now(),
  ui_bytes: bytes,
};
"""


def driver():
    opts = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,900"):
        opts.add_argument(a)
    opts.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def fmt(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):7.0f} ({min(values):.0f}-{max(values):.0f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    # A plain-text file of the server: the browser's own floor.
    PAGES.insert(0, ("a text file (the browser's floor)", "/ui/vendor/uplot/LICENSE", None))
    print(f"{'page':44} {'first paint':>20} {'FCP':>20} {'warm first paint':>20} {'/api/query':>20} "
          f"{'chart/ready':>20}  UI bytes  answer bytes")
    for name, path, kind in PAGES:
        rows = []
        for _ in range(args.runs):
            d = driver()
            try:
                row = {}
                # Cold: a new profile; warm: the same page again in the same
                # browser (files revalidated: 304s).
                for visit in ("cold", "warm"):
                    if visit == "warm":
                        d.get("about:blank")
                    d.get(f"http://{args.addr}{path}")
                    if kind:
                        WebDriverWait(d, 120, poll_frequency=0.05).until(
                            lambda d: d.execute_script(READY[kind]))
                    else:
                        time.sleep(0.5)
                    t = d.execute_script(TIMINGS)
                    row.update(t if visit == "cold" else {"warm_fp": t["fp"]})
                rows.append(row)
            finally:
                d.quit()
        done = [r["drawn"] if kind == "chart" else (r["ready"] if kind else None) for r in rows]
        print(f"{name:44} {fmt([r['fp'] for r in rows]):>20} {fmt([r['fcp'] for r in rows]):>20} "
              f"{fmt([r['warm_fp'] for r in rows]):>20} "
              f"{fmt([r['query'] for r in rows]):>20} {fmt(done):>20}  {rows[-1]['ui_bytes']:8d}  {rows[-1]['query_bytes']:12d}",
              flush=True)


if __name__ == "__main__":
    main()
