#!/usr/bin/env python3
"""Browser test of hourglass's web UI: headless Chromium driven by Selenium
against a real server with known data.

    python3 tests/ui/browser_test.py --bin target/release/hourglass --screenshots DIR

Needs Python 3 with selenium 4, and Debian's chromium and chromium-driver.
Starts its own servers (one open, one with auth) on free ports in a
temporary directory, writes the data with /api/put, and checks:
the page draws OpenTSDB-style links (fragment and query string, several m)
with the expected series in the legend; auto-refresh keeps the zoom and the
hidden series; fill=null/nan are gaps; many jittered series are drawn on a
coarser grid (with a note); the form round-trips `m` and refuses what m
cannot hold; metric autocomplete; the table, JSON and CSV views hold the
numbers of /api/query (CSV safe for spreadsheets); the time zone shown;
explore's series counts, top tag values, empty state and search beyond the
listed metrics; a running query on the status page; the token prompt under
auth (Cancel sticks, the token stays out of links and CSV, secrets masked);
every control has an accessible name; the query form works from the
keyboard alone; no CSP violation or JS error in the console.
Prints PASS/FAIL per check and exits non-zero on any failure. Screenshots
of each page go to --screenshots.
"""

import argparse
import csv
import datetime
import gzip
import io
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "src" / "server" / "ui" / "assets"
GZIP_LIMIT = 300 * 1024
WAIT = 20  # seconds any state may take to appear

HOSTS = ["web-1", "web-2", "web-3", "web-4"]
DCS = ["east", "west"]
PODS = [f"pod-{i:02d}" for i in range(25)]
EXPECTED_SERIES = {
    "cpu.usage_user": len(HOSTS) * len(DCS),
    "cpu.usage_system": len(HOSTS) * len(DCS),
    "net.bytes_recv": len(HOSTS),
    "app.requests": len(PODS),
}
NOW = int(time.time()) // 60 * 60
START = NOW - 7200  # two hours of points, one a minute


# ---------------------------------------------------------------- results

class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}" + (f" ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}" + (f": {detail}" if detail else ""), flush=True)
        return ok

    def run(self, name, fn):
        """Runs one check function; an exception is a failure of it."""
        try:
            ok, detail = fn()
        except Exception as e:  # noqa: BLE001 - any error fails the check
            ok, detail = False, f"{type(e).__name__}: {e}"
            traceback.print_exc(limit=3)
        return self.check(name, ok, detail)


# ---------------------------------------------------------------- server

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, token=None, timeout=30):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class Server:
    def __init__(self, binary, workdir, name, extra=""):
        self.binary = binary
        self.dir = Path(workdir) / name
        self.data = self.dir / "data"
        self.data.mkdir(parents=True)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.config = self.dir / "hourglass.toml"
        self.config.write_text(
            f'[server]\nbind = "127.0.0.1"\nport = {self.port}\n'
            f'[storage]\ndata_dir = "{self.data}"\n'
            '[wal]\nfsync = "never"\n' + extra)
        self.proc = None

    def token(self, name, scope):
        out = subprocess.run(
            [self.binary, "token", "create", "--config", str(self.config),
             "--name", name, "--scope", scope],
            check=True, capture_output=True, text=True, timeout=60)
        return out.stdout.strip().splitlines()[0].strip()

    def start(self):
        self.log = open(self.dir / "server.log", "wb")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--config", str(self.config)],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: "
                                   + (self.dir / "server.log").read_text()[-2000:])
            try:
                # 200, or 401 when auth is on: either way it answers.
                status, _, _ = http("GET", self.base + "/api/version", timeout=2)
                if status in (200, 401):
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not answer in 60 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None


def points():
    """The test data: deterministic values, one point a minute."""
    out = []
    for i, t in enumerate(range(START, NOW, 60)):
        for h, host in enumerate(HOSTS):
            for d, dc in enumerate(DCS):
                tags = {"host": host, "dc": dc}
                out.append({"metric": "cpu.usage_user", "timestamp": t,
                            "value": ((i * 7 + h * 13 + d * 5) % 50) + 0.25 * (h + 1) + 10 * d,
                            "tags": tags})
                out.append({"metric": "cpu.usage_system", "timestamp": t,
                            "value": ((i * 3 + h * 11) % 20) / 4 + d,
                            "tags": tags})
            out.append({"metric": "net.bytes_recv", "timestamp": t,
                        "value": (h + 1) * 1000 * i + (i * i) % 97,
                        "tags": {"host": host, "dc": DCS[h % 2]}})
        for p, pod in enumerate(PODS):
            out.append({"metric": "app.requests", "timestamp": t,
                        "value": float((i + p) % 13) * 1.5,
                        "tags": {"pod": pod, "app": "api"}})
    return out


def write_data(server, token=None):
    pts = points()
    for i in range(0, len(pts), 5000):
        status, _, body = http("POST", server.base + "/api/put", pts[i:i + 5000], token=token)
        if status != 204:
            raise RuntimeError(f"/api/put answered {status}: {body[:300]!r}")
    return len(pts)


def api_query(server, params, token=None):
    q = urllib.parse.urlencode(params, doseq=True, safe="{}*:,|=")
    status, _, body = http("GET", f"{server.base}/api/query?{q}", token=token)
    if status != 200:
        raise RuntimeError(f"/api/query {q} answered {status}: {body[:300]!r}")
    return json.loads(body)


def series_name(s):
    tags = ",".join(f"{k}={v}" for k, v in s["tags"].items())
    return f"{s['metric']}{{{tags}}}" if tags else s["metric"]


def same_number(a, b):
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


class SlowQueries:
    """Keeps a query running: threads send, back to back, a query that
    fills a month with 1 s buckets (a few tenths of a second of work each),
    until stopped (at most 120 s)."""

    def __init__(self, server, m, threads=1):
        self.path = "/api/query?" + urllib.parse.urlencode(
            {"start": "30d-ago", "m": m}, safe="{}*:,|=-")
        self.port = server.port
        self.stop_event = threading.Event()
        self.deadline = time.time() + 120
        self.sent = 0
        self.socks = set()
        self.threads = [threading.Thread(target=self.loop, daemon=True) for _ in range(threads)]
        for i, t in enumerate(self.threads):
            t.start()
            time.sleep(0.15 * (i + 1))

    def loop(self):
        while not self.stop_event.is_set() and time.time() < self.deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
                    self.socks.add(sock)
                    sock.sendall(f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 "Connection: close\r\n\r\n".encode())
                    self.sent += 1
                    while not self.stop_event.is_set() and sock.recv(1 << 20):
                        pass
                    self.socks.discard(sock)
            except OSError:
                time.sleep(0.1)

    def close(self):
        self.stop_event.set()
        for sock in list(self.socks):  # the server stops a query whose client left
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.threads:
            t.join(35)


# ---------------------------------------------------------------- browser

def make_driver(chromium, chromedriver, downloads):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,900", "--lang=en-US", "--no-first-run"):
        opts.add_argument(a)
    if chromium:
        opts.binary_location = chromium
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    opts.add_experimental_option("prefs", {
        "download.default_directory": str(downloads),
        "download.prompt_for_download": False,
    })
    driver = webdriver.Chrome(service=Service(chromedriver) if chromedriver else None, options=opts)
    driver.set_window_size(1400, 900)
    try:
        driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                               {"behavior": "allow", "downloadPath": str(downloads)})
    except Exception:  # noqa: BLE001 - older drivers: the prefs above do it
        pass
    return driver


class Page:
    """The browser on one server, with the helpers the checks use."""

    def __init__(self, driver, server, shots):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        self.d = driver
        self.server = server
        self.shots = Path(shots)
        self.By = By
        self.Wait = WebDriverWait
        self.backlog = []  # console entries read by drain(), for the next console()

    def open(self, path):
        # A new document each time (a fragment-only change would not load).
        self.d.get("about:blank")
        self.d.get(self.server.base + path)

    def wait(self, cond, what, timeout=WAIT):
        return self.Wait(self.d, timeout).until(lambda d: cond(), message=what)

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def css(self, sel):
        return self.d.find_elements(self.By.CSS_SELECTOR, sel)

    def one(self, sel):
        return self.d.find_element(self.By.CSS_SELECTOR, sel)

    def legend(self):
        return self.js("return [...document.querySelectorAll('#legend [data-series]')]"
                       ".map(e => e.querySelector('.name') ? e.querySelector('.name').textContent : e.textContent)")

    def wait_legend(self, n):
        self.wait(lambda: self.js(
            "const c = document.getElementById('chart');"
            "return c && c.dataset.series === arguments[0] && !!c.querySelector('canvas')"
            " && document.querySelectorAll('#legend [data-series]').length === Number(arguments[0])",
            str(n)), f"a chart of {n} series")
        return self.legend()

    def shot(self, name):
        path = self.shots / name
        self.d.save_screenshot(str(path))
        return path

    def drain(self, allow):
        """Reads the browser log, drops the entries that contain one of
        `allow` and keeps the others for the next console()."""
        self.backlog += [e for e in self.d.get_log("browser")
                         if not any(a in e.get("message", "") for a in allow)]

    def console(self, allow=()):
        """Console entries that are errors or CSP reports (drains the log,
        with what drain() kept)."""
        bad = []
        entries, self.backlog = self.backlog + self.d.get_log("browser"), []
        for e in entries:
            msg = e.get("message", "")
            if any(a in msg for a in allow):
                continue
            if e.get("level") == "SEVERE" or "Content Security Policy" in msg or "Refused to" in msg:
                bad.append(f"{e.get('level')}: {msg[:300]}")
        return bad


UNNAMED_JS = r"""
// Every input/select/button/textarea/link and every element with a widget
// role must have an accessible name (aria-labelledby, aria-label, a
// <label>, its text, title or alt). Returns descriptions of those without.
const WIDGET = new Set(['button', 'checkbox', 'combobox', 'listbox', 'option', 'tab', 'tablist',
  'tabpanel', 'textbox', 'searchbox', 'switch', 'radio', 'slider', 'spinbutton', 'menu',
  'menuitem', 'link', 'img', 'group', 'dialog', 'region', 'grid', 'tree', 'treeitem']);
const text = (e) => (e ? (e.innerText || e.textContent || '') : '').trim();
function name(e) {
  const by = e.getAttribute('aria-labelledby');
  if (by) {
    const t = by.split(/\s+/).map(id => text(document.getElementById(id))).join(' ').trim();
    if (t) return t;
  }
  const al = (e.getAttribute('aria-label') || '').trim();
  if (al) return al;
  if (e.labels && e.labels.length) {
    const t = [...e.labels].map(l => text(l)).join(' ').trim();
    if (t) return t;
  }
  if (e.tagName === 'IMG') return (e.getAttribute('alt') || '').trim() || (e.getAttribute('alt') === '' ? '(decorative)' : '');
  const tag = e.tagName;
  const role = e.getAttribute('role') || '';
  if (tag === 'BUTTON' || tag === 'A' || ['option', 'tab', 'button', 'link', 'menuitem', 'treeitem'].includes(role)) {
    const t = (e.textContent || '').trim();
    if (t) return t;
  }
  if (tag === 'DIALOG' || role === 'dialog') return '';
  return (e.getAttribute('title') || '').trim();
}
const els = document.querySelectorAll('input, select, textarea, button, a[href], [role]');
const bad = [];
for (const e of els) {
  const role = e.getAttribute('role');
  if (role && !WIDGET.has(role) && !['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON', 'A'].includes(e.tagName)) continue;
  if (e.type === 'hidden') continue;
  if (!name(e)) bad.push(e.outerHTML.slice(0, 160));
}
return [els.length, bad];
"""


# ---------------------------------------------------------------- checks

def check_gzip(res):
    total = 0
    files = 0
    for p in sorted(ASSETS.rglob("*")):
        if p.is_file():
            total += len(gzip.compress(p.read_bytes(), 9))
            files += 1
    print(f"INFO assets: {files} files, {total} bytes gzip-compressed ({total / 1024:.1f} KiB)")
    res.check("assets under 300 KB gzip-compressed", total <= GZIP_LIMIT, f"{total} bytes")


def check_query_page(res, pg):
    def link():
        pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*}")
        names = pg.wait_legend(4)
        want = sorted(f"cpu.usage_user{{host={h}}}" for h in HOSTS)
        paint = pg.js("return performance.getEntriesByType('paint')"
                      ".map(p => p.name + '=' + Math.round(p.startTime) + 'ms').join(', ')")
        print(f"INFO first paint of the query page: {paint or 'not reported'}")
        pg.shot("query.png")
        return sorted(names) == want, f"legend {names}"
    res.run("OpenTSDB link draws its chart, 4 series in the legend", link)

    def zoom():
        from selenium.webdriver.common.action_chains import ActionChains
        over = pg.one("#chart .u-over")
        full = pg.js("return document.querySelector('#chart .u-over').getBoundingClientRect().width")
        ActionChains(pg.d).move_to_element_with_offset(over, -int(full / 4), 0).click_and_hold() \
            .move_by_offset(int(full / 3), 0).release().perform()
        pg.wait(lambda: pg.one("#zoom-note").is_displayed(), "the zoom note")
        zoomed = pg.one("#zoom-range").text
        ActionChains(pg.d).double_click(over).perform()
        pg.wait(lambda: not pg.one("#zoom-note").is_displayed(), "the zoom reset")
        return True, zoomed
    res.run("chart zooms on drag and resets on double-click", zoom)

    def resize():
        before = pg.js("return document.querySelector('#chart canvas').getBoundingClientRect().width")
        pg.d.set_window_size(1000, 900)
        pg.wait(lambda: pg.js("return document.querySelector('#chart canvas').getBoundingClientRect().width") < before - 200,
                "a narrower chart")
        after = pg.js("return document.querySelector('#chart canvas').getBoundingClientRect().width")
        pg.d.set_window_size(1400, 900)
        return True, f"{before:.0f} px -> {after:.0f} px"
    res.run("chart follows the window's width", resize)

    def dark():
        def rgb(css):
            return [float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3]]

        def luminance(c):
            return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
        pg.d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                             {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*}")
        pg.wait_legend(4)
        light = pg.js("return getComputedStyle(document.body).backgroundColor")
        try:
            pg.d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                 {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
            pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*}")
            pg.wait_legend(4)
            bg = pg.js("return getComputedStyle(document.body).backgroundColor")
            pg.shot("query-dark.png")
        finally:
            pg.d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        return bg != light and luminance(rgb(bg)) < 64 < luminance(rgb(light)), f"light {light}, dark {bg}"
    res.run("dark colour scheme follows prefers-color-scheme", dark)

    def autoreload():
        from selenium.webdriver.common.action_chains import ActionChains
        pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*}&autoreload=10")
        pg.wait_legend(4)
        sel = pg.one("#autoreload").get_attribute("value")
        count = "return performance.getEntriesByType('resource').filter(e => e.name.includes('/api/query?')).length"
        drawn = "return performance.getEntriesByName('hourglass:chart-drawn').length"
        first, draws = pg.js(count), pg.js(drawn)
        # Zoom in and hide web-2, then let the refresh redraw the chart.
        over = pg.one("#chart .u-over")
        full = pg.js("return document.querySelector('#chart .u-over').getBoundingClientRect().width")
        ActionChains(pg.d).move_to_element_with_offset(over, -int(full / 4), 0).click_and_hold() \
            .move_by_offset(int(full / 3), 0).release().perform()
        pg.wait(lambda: pg.one("#zoom-note").is_displayed(), "the zoom note")
        zoomed = pg.one("#zoom-range").text
        pg.one('#legend [data-series="cpu.usage_user{host=web-2}"]').click()
        # Screen readers hear user-run queries, not each refresh.
        pg.js("window.__announced = 0; new MutationObserver(() => window.__announced++)"
              ".observe(document.getElementById('query-announce'), {childList: true, characterData: true, subtree: true})")
        pg.wait(lambda: pg.js(count) > first and pg.js(drawn) > draws, "a second run, drawn", timeout=25)
        pressed = pg.js("return Object.fromEntries([...document.querySelectorAll('#legend [data-series]')]"
                        ".map(b => [b.dataset.series.replace('cpu.usage_user', ''), b.getAttribute('aria-pressed')]))")
        still = pg.one("#zoom-note").is_displayed() and pg.one("#zoom-range").text == zoomed
        announced = pg.js("return window.__announced")
        live = pg.js("const s = document.getElementById('query-status');"
                     "return s.getAttribute('aria-live') || s.getAttribute('role') || ''")
        ok = (sel == "10" and still and announced == 0 and not live
              and pressed == {"{host=web-1}": "true", "{host=web-2}": "false",
                              "{host=web-3}": "true", "{host=web-4}": "true"})
        return ok, (f"select={sel}, runs {first} -> {pg.js(count)}, zoom {zoomed!r} kept={still},"
                    f" legend {pressed}, announced {announced}, #query-status live={live!r}")
    res.run("auto-refresh (autoreload=10) runs again, keeps the zoom and the hidden series, announces nothing",
            autoreload)

    def autoreload_values():
        got = {}
        for v in ("2", "-10", "7.5", "abc", "0", "30"):
            pg.open(f"/#start=2h-ago&autoreload={v}")
            pg.wait(lambda: pg.css(".query-row input.metric"), "the form")
            got[v] = pg.one("#autoreload").get_attribute("value")
        want = {"2": "5", "-10": "", "7.5": "", "abc": "", "0": "", "30": "30"}
        return got == want, f"{got}"
    res.run("autoreload from a link: whole seconds, at least 5, anything else off", autoreload_values)

    def two_groups():
        pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*,dc=*}")
        names = pg.wait_legend(8)
        return len(set(names)) == 8, f"{len(names)} series"
    res.run("group by host and dc: 8 series", two_groups)

    def several():
        pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*}&m=avg:cpu.usage_system{dc=*}")
        names = pg.wait_legend(6)
        rows = len(pg.css("#queries .query-row"))
        return rows == 2 and any("cpu.usage_system" in n for n in names), f"{rows} query rows, {names}"
    res.run("several m: both queries on one chart (6 series)", several)

    def query_string():
        pg.open("/?start=2h-ago&m=sum:cpu.usage_user%7Bdc=*%7D")
        pg.wait_legend(2)
        search = pg.js("return location.search")
        frag = urllib.parse.unquote(pg.js("return location.hash"))
        return search == "" and "m=sum:cpu.usage_user{dc=*}" in frag, f"now at {frag!r}"
    res.run("query-string link /?start=..&m=.. opens the same view", query_string)

    def roundtrip():
        m = "sum:5m-avg-zero:rate{counter}:net.bytes_recv{host=*}{dc=east|west}"
        pg.open("/#start=2h-ago&m=" + m + "&o=axis%20x1y1&wxh=800x400&yrange=[0:]")
        pg.wait_legend(4)
        row = pg.one(".query-row")
        f = pg.js("""const r = arguments[0]; const q = s => r.querySelector(s);
            return {agg: q('select.agg').value, iv: q('.ds-interval').value, fn: q('.ds-fn').value,
                    fill: q('.ds-fill').value, rate: q('.rate').checked, counter: q('.counter').checked,
                    filters: [...r.querySelectorAll('.filter')].map(f =>
                        [f.querySelector('.tagk').value, f.querySelector('.tagv').value, f.querySelector('.groupby').checked])}""", row)
        want = {"agg": "sum", "iv": "5m", "fn": "avg", "fill": "zero", "rate": True, "counter": True,
                "filters": [["host", "*", True], ["dc", "east|west", False]]}
        link = urllib.parse.unquote(pg.one("#permalink").get_attribute("href"))
        kept = all(k in link for k in ("m=" + m, "o=axis x1y1", "wxh=800x400", "yrange=[0:]"))
        return f == want and kept, f"form {f}, link {link}"
    res.run("m parsed into the form and written back unchanged (other GUI keys kept)", roundtrip)

    def raw_kept():
        m = "sum:rate:1m-avg:cpu.usage_user{host=web-1}"  # rate before downsample: no form for it
        pg.open("/#start=2h-ago&m=" + urllib.parse.quote(m, safe=":{}=*"))
        pg.wait(lambda: pg.js("return !!document.querySelector('.query-row .raw-m')"), "a query row")
        val = pg.js("return document.querySelector('.query-row .raw-m').value")
        shown = pg.js("return !document.querySelector('.query-row .raw-m').closest('[hidden]')")
        pg.wait(lambda: pg.js("return document.getElementById('query-status').textContent !== 'Running…'"), "the answer")
        link = urllib.parse.unquote(pg.one("#permalink").get_attribute("href"))
        pg.drain(allow=("status of 400",))  # the server may refuse this one; the rest is kept
        return val == m and shown and ("m=" + m) in link, f"raw {val!r}, link {link}"
    res.run("an m the form cannot show is kept as text", raw_kept)


def put(server, pts, token=None):
    for i in range(0, len(pts), 5000):
        status, _, body = http("POST", server.base + "/api/put", pts[i:i + 5000], token=token)
        if status != 204:
            raise RuntimeError(f"/api/put answered {status}: {body[:300]!r}")


# Counts the pixels of the first series' colour (#1f77b4) in columns of the
# chart's canvas; arguments: [[time (s), ...]], the data's first and last
# time (s). The plot area is where .u-over is.
COLUMN_PIXELS_JS = r"""
const [times, t0, t1] = arguments;
const canvas = document.querySelector('#chart canvas');
const over = document.querySelector('#chart .u-over').getBoundingClientRect();
const cr = canvas.getBoundingClientRect();
const k = canvas.width / cr.width;
const ctx = canvas.getContext('2d');
return times.map(t => {
  const x = Math.round((over.left - cr.left + (t - t0) / (t1 - t0) * over.width) * k);
  const img = ctx.getImageData(x - 2, Math.round((over.top - cr.top) * k), 5, Math.round(over.height * k)).data;
  let n = 0;
  for (let i = 0; i < img.length; i += 4) {
    if (img[i + 3] > 100 && Math.abs(img[i] - 0x1f) < 40 && Math.abs(img[i + 1] - 0x77) < 40 && Math.abs(img[i + 2] - 0xb4) < 40) n++;
  }
  return n;
});
"""


def check_chart_data(res, pg):
    t0 = START + 600
    t1 = t0 + 59 * 60
    # One point a minute for an hour, minutes 20-29 missing; and a second
    # series at the half minutes.
    put(pg.server, [{"metric": "gap.metric", "timestamp": t0 + i * 60, "value": 5, "tags": {"k": "v"}}
                    for i in range(60) if not 20 <= i < 30])
    put(pg.server, [{"metric": "gap.offset", "timestamp": t0 + i * 60 + 30, "value": 2, "tags": {"k": "v"}}
                    for i in range(59)])

    def gap(fill):
        # fill=null answers null there, fill=nan "NaN": a gap from the point
        # before to the point after (not a line across it). Where only the
        # other series has a point (the half minutes) the line goes on.
        m = f"sum:1m-avg-{fill}:gap.metric"
        want = api_query(pg.server, {"start": t0, "end": t1, "m": m})
        nulls = sum(v is None or v == "NaN" or (isinstance(v, float) and math.isnan(v)) for v in want[0]["dps"].values())
        pg.open(f"/#start={t0}&end={t1}&m={m}&m=sum:gap.offset")
        pg.wait_legend(2)
        pg.wait(lambda: pg.js("return performance.getEntriesByName('hourglass:chart-drawn').length") > 0, "drawn")
        time.sleep(0.3)  # the canvas is painted
        # 24:30 and 19:15 in the gap, 10:30 between two points.
        inside, edge, outside = pg.js(COLUMN_PIXELS_JS, [t0 + 1470, t0 + 1155, t0 + 630], t0, t1)
        # The value under the cursor in the gap: null (shown as –), not
        # undefined (no point there: shown empty).
        from selenium.webdriver.common.action_chains import ActionChains
        over = pg.one("#chart .u-over")
        w = pg.js("return document.querySelector('#chart .u-over').getBoundingClientRect().width")
        ActionChains(pg.d).move_to_element_with_offset(over, int(w * (1470 / (t1 - t0) - 0.5)), 0).perform()
        value = pg.wait(lambda: pg.js("return document.querySelector('#legend .value').textContent"),
                        "the value under the cursor")
        pg.shot(f"{fill}-gap.png")
        return nulls == 10 and inside == 0 and edge == 0 and outside > 0 and value == "–", \
            (f"{nulls} {fill}s from the API; series pixels in the gap {inside} and {edge}, between points {outside};"
             f" under the cursor {value!r}")
    res.run("fill=null: the nulls are a gap in the line (spanGaps off), null under the cursor", lambda: gap("null"))
    res.run("fill=nan: the NaNs are a gap in the line too", lambda: gap("nan"))

    def jitter():
        # 120 series x 400 points at random milliseconds: 48,000 distinct
        # times x 120 series is over the 4M cells the chart draws exactly.
        import random
        rnd = random.Random(7)
        n_series, n_points = 120, 400
        base = (NOW - 5000) * 1000
        put(pg.server, [{"metric": "jitter.ms", "timestamp": base + i * 10000 + rnd.randrange(1, 1000),
                         "value": i % 17 + s, "tags": {"s": f"s{s:03d}"}}
                        for s in range(n_series) for i in range(n_points)])
        pg.open(f"/#start={NOW - 5000}&end={NOW}&m=sum:jitter.ms{{s=*}}")
        names = pg.wait_legend(n_series)
        note = pg.wait(lambda: pg.one("#chart-note").is_displayed() and pg.one("#chart-note").text, "the note")
        pg.shot("jitter.png")
        pg.one("#tab-table").click()
        pg.wait(lambda: pg.css("#table tbody tr[data-ts]"), "the table")
        exact = pg.js("return [...document.querySelectorAll('#table tbody tr[data-ts]')].slice(0, 50)"
                      ".filter(r => Number(r.dataset.ts) % 1000 !== 0).length")
        pg.one("#tab-chart").click()
        return len(names) == n_series and "1 s" in note and exact == 50, \
            f"{len(names)} series; note {note!r}; {exact}/50 table times keep their milliseconds"
    res.run("many series at jittered ms times: drawn on a 1 s grid, with a note; the table keeps the ms", jitter)


def check_form(res, pg):
    def refuse():
        pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*}")
        pg.wait_legend(4)
        hash_before = pg.js("return location.hash")
        runs = "return performance.getEntriesByType('resource').filter(e => e.name.includes('/api/query?')).length"
        before = pg.js(runs)
        v = pg.one(".query-row .tagv")
        v.clear()
        v.send_keys("web-1,web-2")
        pg.one("#run").click()
        err = pg.wait(lambda: pg.one("#query-error").is_displayed() and pg.one("#query-error").text, "the error")
        invalid = v.get_attribute("aria-invalid")
        refused = pg.js(runs) == before and pg.js("return location.hash") == hash_before
        # A filter function (no , { } outside parentheses) is fine; spaces
        # around a key are trimmed in the field itself.
        v.clear()
        v.send_keys("literal_or(web-1|web-3)")
        k = pg.one(".query-row .tagk")
        k.clear()
        k.send_keys(" host ")
        pg.one("#run").click()
        names = pg.wait_legend(2)
        key = k.get_attribute("value")
        frag = urllib.parse.unquote(pg.js("return location.hash"))
        ok = ("Tag value 1" in err and "“,”" in err and invalid == "true" and refused
              and sorted(names) == ["cpu.usage_user{host=web-1}", "cpu.usage_user{host=web-3}"]
              and key == "host" and "m=sum:cpu.usage_user{host=literal_or(web-1|web-3)}" in frag
              and not pg.one("#query-error").is_displayed())
        return ok, f"error {err!r} aria-invalid={invalid} refused={refused}; then {names}, key {key!r}, {frag!r}"
    res.run("the form refuses , { } in a field (naming it), keeps literal_or(a|b), trims keys", refuse)

    def time_zone():
        # A zone without summer time: the header says UTC+05:30, the table
        # shows that local time, the hint says absolute times are UTC.
        pg.d.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Kolkata"})
        try:
            pg.open(f"/#start={NOW - 600}&end={NOW}&m=sum:cpu.usage_user&view=table")
            pg.wait(lambda: pg.css("#table tbody tr[data-ts]"), "the table")
            head = pg.one("#table-time").text
            ts, shown = pg.js("const r = document.querySelector('#table tbody tr[data-ts]');"
                              "return [Number(r.dataset.ts), r.cells[1].textContent]")
            want = datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone(datetime.timedelta(hours=5, minutes=30)))
            hint = pg.one("#time-hint").text
            hint_shown = pg.one("#time-hint").is_displayed()
        finally:
            pg.d.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})
        ok = (head == "Time (UTC+05:30)" and shown == want.strftime("%Y-%m-%d %H:%M:%S")
              and hint_shown and "UTC" in hint)
        return ok, f"header {head!r}, {ts} shown as {shown!r}, hint {hint!r}"
    res.run("time zone: the table header names the browser's offset, the hint says absolute times are UTC",
            time_zone)


def check_autocomplete(res, pg):
    def typing():
        pg.open("/")
        inp = pg.wait(lambda: pg.css(".query-row input.metric") and pg.one(".query-row input.metric"), "metric input")
        role = inp.get_attribute("role")
        inp.click()
        time.sleep(0.6)  # focus alone does not open the list
        on_focus = inp.get_attribute("aria-expanded")
        inp.send_keys("cpu.")

        def options():
            return pg.js("const i = document.querySelector('.query-row input.metric');"
                         "const l = document.getElementById(i.getAttribute('aria-controls'));"
                         "return l && !l.hidden ? [...l.querySelectorAll('[role=option]')].map(o => o.textContent) : null")
        opts = pg.wait(options, "suggestions for cpu.")
        expanded = inp.get_attribute("aria-expanded")
        name = inp.accessible_name  # as Chromium computes it, with the list open
        ok = (role == "combobox" and expanded == "true" and {"cpu.usage_user", "cpu.usage_system"} <= set(opts)
              and all(o.startswith("cpu.") for o in opts) and name == "Metric" and on_focus == "false")
        return ok, f"role={role} name={name!r} expanded on focus={on_focus}, after typing={expanded} options={opts}"
    res.run("metric autocomplete: closed on focus, offers cpu.usage_user and cpu.usage_system for 'cpu.'", typing)

    def late_answers():
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys
        pg.open("/")
        inp = pg.wait(lambda: pg.css(".query-row input.metric") and pg.one(".query-row input.metric"), "metric input")
        inp.click()
        inp.send_keys("cpu.usage_use")
        listed = ("const i = document.querySelector('.query-row input.metric');"
                  "const l = document.getElementById(i.getAttribute('aria-controls'));"
                  "return !l.hidden && [...l.querySelectorAll('[role=option]')].some(o => o.textContent === 'cpu.usage_user')")
        pg.wait(lambda: pg.js(listed), "the suggestion")
        highlighted = ("const i = document.querySelector('.query-row input.metric');"
                       "const id = i.getAttribute('aria-activedescendant'); const o = id && document.getElementById(id);"
                       "return o && o.getAttribute('aria-selected') === 'true' ? o.textContent : null")
        # Type and highlight before the debounced request leaves: its
        # answer, arriving after, keeps the highlighted option.
        ActionChains(pg.d).send_keys("r").send_keys(Keys.ARROW_DOWN).perform()
        asked = ("return performance.getEntriesByType('resource')"
                 ".some(e => e.name.includes('/api/suggest') && e.name.includes('q=cpu.usage_user'))")
        pg.wait(lambda: pg.js(asked), "the answer for cpu.usage_user")
        time.sleep(0.3)
        kept = pg.js(highlighted)
        # Choose while a request is pending: nothing re-opens the list.
        ActionChains(pg.d).send_keys(Keys.BACKSPACE).send_keys("r").send_keys(Keys.ENTER).perform()
        time.sleep(0.8)
        expanded = inp.get_attribute("aria-expanded")
        value = inp.get_attribute("value")
        return kept == "cpu.usage_user" and expanded == "false" and value == "cpu.usage_user", \
            f"highlight after the late answer {kept!r}; after choosing: expanded={expanded} value={value!r}"
    res.run("autocomplete: a late answer keeps the highlight; a choice cancels the pending request", late_answers)


def check_table_json_csv(res, pg, downloads):
    m = "sum:cpu.usage_user{host=*}"
    start, end = START, NOW
    want = api_query(pg.server, {"start": start, "end": end, "m": m, "ms": ""})
    expected = []
    for s in want:
        for ts, v in s["dps"].items():
            expected.append((series_name(s), int(ts), v))
    path = f"/#start={start}&end={end}&m={m}&view=table"

    def table():
        pg.open(path)
        pg.wait(lambda: len(pg.css("#table tbody tr[data-ts]")) == len(expected),
                f"{len(expected)} table rows")
        rows = pg.js("return [...document.querySelectorAll('#table tbody tr[data-ts]')]"
                     ".map(r => [r.dataset.series, Number(r.dataset.ts), r.dataset.value, r.cells[2].textContent])")
        pg.shot("table.png")
        bad = [(r, e) for r, e in zip(rows, expected)
               if r[0] != e[0] or r[1] != e[1] or not same_number(r[2], e[2]) or not same_number(r[3], e[2])]
        return len(rows) == len(expected) and not bad and expected, \
            f"{len(rows)} rows, {len(bad)} differ {bad[:3]}"
    res.run("table view shows every point of /api/query (series, time, value)", table)

    def json_view():
        pg.one("#tab-json").click()
        pg.wait(lambda: pg.one("#json").is_displayed() and pg.one("#json").text.strip(), "the JSON view")
        got = json.loads(pg.js("return document.getElementById('json').textContent"))
        return got == want, f"{len(got)} series"
    res.run("JSON view holds the answer of /api/query", json_view)

    def csv_download():
        f = download_csv(pg, downloads)
        rows = list(csv.DictReader(io.StringIO(f.read_text())))
        got = []
        for r in rows:
            ts = datetime.datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00"))
            got.append((r["series"], int(round(ts.timestamp() * 1000)), r["value"]))
        bad = [(g, e) for g, e in zip(got, expected) if g[0] != e[0] or g[1] != e[1] or not same_number(g[2], e[2])]
        has_tags = rows and "tag:host" in rows[0] and rows[0]["tag:host"] in HOSTS
        return len(got) == len(expected) and not bad and has_tags, \
            f"{f.name}: {len(got)} rows, {len(bad)} differ, columns {list(rows[0].keys()) if rows else []}"
    res.run("CSV download holds the same points (with tag:<key> columns)", csv_download)

    def csv_injection():
        # Names a spreadsheet would read as a formula get a leading ';
        # tag keys named like the fixed columns are tag:series, ...
        put(pg.server, [{"metric": "-csv.test", "timestamp": NOW - 120, "value": -1.5,
                         "tags": {"series": "-x", "value": "-5", "metric": "m"}}])
        pg.open(f"/#start={NOW - 600}&end={NOW}&m=sum:-csv.test{{series=*,value=*,metric=*}}")
        pg.wait_legend(1)
        f = download_csv(pg, downloads)
        lines = f.read_text().splitlines()
        header = next(csv.reader([lines[0]]))
        row = dict(zip(header, next(csv.reader([lines[1]]))))
        ok = (header == ["series", "timestamp", "value", "metric", "tag:metric", "tag:series", "tag:value"]
              and row["series"].startswith("'-csv.test{") and row["metric"] == "'-csv.test"
              and row["tag:series"] == "'-x" and row["tag:value"] == "-5" and row["value"] == "-1.5")
        return ok, f"{lines[:2]}"
    res.run("CSV: formula-like text cells start with ', tag columns are tag:<key>", csv_injection)


def download_csv(pg, downloads):
    """Clicks Download CSV; returns the file."""
    for f in Path(downloads).glob("*"):
        f.unlink()
    pg.one("#download-csv").click()

    def done():
        files = [f for f in Path(downloads).glob("*.csv")]
        return files[0] if files and not list(Path(downloads).glob("*.crdownload")) else None
    return pg.wait(done, "the CSV download")


def check_explore(res, pg):
    def counts():
        pg.open("/#page=explore")
        pg.wait(lambda: all(pg.css(f'#explore-metrics tr[data-metric="{m}"]') for m in EXPECTED_SERIES),
                "the metrics")
        got = pg.js("const o = {}; for (const r of document.querySelectorAll('#explore-metrics tr[data-metric]'))"
                    " o[r.dataset.metric] = Number(r.querySelector('.series-count').textContent); return o")
        ok = all(got.get(m) == n for m, n in EXPECTED_SERIES.items())
        return ok, f"{got}"
    res.run("explore lists each metric with its series count", counts)

    def metric():
        pg.one('#explore-metrics tr[data-metric="app.requests"] a').click()
        pg.wait(lambda: pg.css('#explore-tags tr[data-tagk="pod"]') and
                len(pg.css("#explore-series tbody tr[data-tsuid]")) == len(PODS), "app.requests' tags and series")
        values = pg.one('#explore-tags tr[data-tagk="pod"] .tag-values').text
        chips = pg.js("return [...document.querySelectorAll('#explore-tags tr[data-tagk=\"pod\"] .chip')]"
                      ".map(c => c.textContent)")
        note = pg.one("#explore-series-note").text
        pg.shot("explore.png")
        # Every pod has one series: the top 10 are the first by name (and
        # by creation), pod-00 ... pod-09, in that order.
        want = [f"{p} (1)" for p in PODS[:10]]
        return values == "25" and chips == want and "25" in note, f"pod values={values} chips={chips} note={note!r}"
    res.run("explore: a metric's tag keys (25 pods, top 10: pod-00 ... pod-09) and its 25 series", metric)

    def keyboard_filter():
        f = pg.one("#explore-filter")
        f.click()
        f.send_keys("cpu.")
        pg.wait(lambda: len(pg.css("#explore-metrics tr[data-metric]")) == 2, "two cpu metrics")
        return True, ""
    res.run("explore's metric filter", keyboard_filter)


def check_explore_empty(res, pg):
    def empty():
        pg.open("/#page=explore")
        text = pg.wait(lambda: pg.js("const r = document.querySelector('#explore-metrics tbody tr.none');"
                                     "return r && r.textContent"), "the empty state")
        return "No metrics" in text and not pg.css("#explore-metrics tr[data-metric]"), text
    res.run("explore on a server without data: an empty-state row", empty)


def check_explore_truncated(res, pg):
    def truncated():
        # More metrics than the 1,000 listed: the filter finds one outside
        # the list by name, and opening it counts its series.
        put(pg.server, [{"metric": f"zz.many.{i:04d}", "timestamp": NOW - 60, "value": i, "tags": {"k": "v"}}
                        for i in range(1010)])
        pg.open("/#page=explore")
        pg.wait(lambda: pg.one("#explore-truncated").is_displayed(), "the truncation note")
        note = pg.one("#explore-truncated").text
        listed = set(pg.js("return [...document.querySelectorAll('#explore-metrics tr[data-metric]')]"
                           ".map(r => r.dataset.metric)"))
        missing = sorted(f"zz.many.{i:04d}" for i in range(1010) if f"zz.many.{i:04d}" not in listed)
        if not missing:
            return False, f"{len(listed)} listed, none of zz.many.* missing"
        name = missing[len(missing) // 2]
        pg.one("#explore-filter").send_keys(name)
        row = f'#explore-metrics tr[data-metric="{name}"]'
        pg.wait(lambda: pg.css(row), f"{name} found by name")
        before = pg.one(row + " .series-count").text
        pg.one(row + " a").click()
        pg.wait(lambda: pg.one("#explore-title").text == name and pg.one(row + " .series-count").text == "1"
                and len(pg.css("#explore-series tbody tr[data-tsuid]")) == 1, f"{name} opened")
        pg.shot("explore-truncated.png")
        return "also finds" in note and len(listed) == 1000 and before == "–", \
            f"{len(listed)} listed, {len(missing)} not; {name}: count {before!r} -> 1; note {note!r}"
    res.run("explore, more metrics than listed: the filter finds the others by name, with their series count",
            truncated)


def check_status(res, pg):
    # One thread: a query is running most of the time (the next one starts
    # as soon as the last ends), and it leaves a core to the browser on a
    # loaded two-core machine; the page polls every 5 s for up to 60 s.
    slow = SlowQueries(pg.server, "sum:1s-avg-zero:cpu.usage_user", threads=1)
    try:
        def running():
            pg.open("/#page=status")
            pg.wait(lambda: pg.css("#status-ingest tr[data-protocol]") and
                    pg.one("#status-uptime").text not in ("", "–") and
                    pg.css("#status-config tr") and pg.css("#status-limits tr") and
                    pg.one("#status-ingest tr[data-protocol] .rate").text not in ("", "…"), "the status page")
            text = pg.wait(lambda: pg.js("const r = document.querySelector('#status-running tr[data-query-id]');"
                                         "return r && r.textContent"), "a running query", timeout=60)
            pg.shot("status.png")
            return "cpu.usage_user" in text, f"{text} ({slow.sent} slow queries sent)"
        res.run("status shows the running query", running)
    finally:
        slow.close()

    def fields():
        version = pg.one("#status-version").text
        uptime = pg.one("#status-uptime").text
        protos = pg.js("return [...document.querySelectorAll('#status-ingest tr[data-protocol]')].map(r => r.dataset.protocol)")
        storage = pg.js("return Object.fromEntries([...document.querySelectorAll('#status-storage tr')]"
                        ".map(r => [r.dataset.key, r.querySelector('td').textContent]))")
        limits = pg.js("return [...document.querySelectorAll('#status-limits tr')].map(r => r.dataset.key)")
        config = pg.js("return Object.fromEntries([...document.querySelectorAll('#status-config tr')]"
                       ".map(r => [r.dataset.key, r.querySelector('td').textContent]))")
        recent = len(pg.css("#status-recent tr[data-query-id]"))
        secrets_hidden = all(v in ("", "********") for k, v in config.items()
                             if "tokens_file" in k or "credentials" in k)
        ok = (version not in ("", "–") and uptime.endswith("s")
              and "put" in protos and "Bytes per point" in storage and "query.max_points" in limits
              and "hourglass.query.timeout_secs" in config and secrets_hidden and recent > 0)
        return ok, (f"version={version!r} uptime={uptime!r} protocols={protos} storage keys={list(storage)[:6]}"
                    f" limits={len(limits)} config={len(config)} recent={recent}")
    res.run("status: version, uptime, ingest per protocol, storage, limits, config (secrets hidden), recent queries", fields)


def check_accessibility(res, pg):
    def names():
        report = []
        for path, ready in (("/#start=2h-ago&m=sum:cpu.usage_user{host=*}", lambda: pg.wait_legend(4)),
                            ("/#page=explore&metric=app.requests",
                             lambda: pg.wait(lambda: pg.css("#explore-series tbody tr[data-tsuid]"), "explore")),
                            ("/#page=status", lambda: pg.wait(lambda: pg.css("#status-config tr"), "status"))):
            pg.open(path)
            ready()
            if path.startswith("/#start"):
                # Open every part of the form: rate options, a second query, a tag filter.
                pg.js("document.querySelector('.query-row .rate').click();"
                      "document.querySelector('.query-row .counter').click();"
                      "document.getElementById('add-query').click();")
            total, bad = pg.js(UNNAMED_JS)
            # The same, as Chromium's accessibility tree names the shown ones.
            for e in pg.css("input, select, textarea, button, a[href], [role=combobox], [role=tab], "
                            "[role=tabpanel], [role=tablist], [role=listbox], [role=option], [role=img], [role=group]"):
                if e.is_displayed() and not (e.accessible_name or "").strip():
                    bad.append("computed: " + e.get_attribute("outerHTML")[:160])
            report.append((path, total, bad))
        bad = [(p, b) for p, _, bs in report for b in bs]
        return not bad, "; ".join(f"{p}: {t} controls" for p, t, _ in report) + (f"; unnamed: {bad[:5]}" if bad else "")
    res.run("every control has an accessible name (query, explore, status)", names)

    def keyboard():
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys
        pg.open("/#start=2h-ago")
        pg.wait(lambda: pg.css(".query-row input.metric"), "the form")
        pg.js("document.activeElement && document.activeElement.blur()")
        act = ActionChains(pg.d)
        for _ in range(40):  # Tab until the metric field has the focus
            if pg.js("return document.activeElement && document.activeElement.matches('input.metric')"):
                break
            act.send_keys(Keys.TAB).perform()
        else:
            return False, "Tab never reached the metric input"
        ActionChains(pg.d).send_keys("cpu.usage_u").perform()
        pg.wait(lambda: pg.js("const i = document.activeElement;"
                              "const l = document.getElementById(i.getAttribute('aria-controls'));"
                              "return l && !l.hidden && [...l.querySelectorAll('[role=option]')].some(o => o.textContent === 'cpu.usage_user')"),
                "the suggestion")
        ActionChains(pg.d).send_keys(Keys.ARROW_DOWN).perform()
        highlighted = ("const i = document.activeElement; const id = i.getAttribute('aria-activedescendant');"
                       "const o = id && document.getElementById(id);"
                       "return o && o.getAttribute('aria-selected') === 'true' ? o.textContent : null")
        active = pg.wait(lambda: pg.js(highlighted), "the highlighted option")
        time.sleep(0.5)  # a late suggest answer keeps the highlight
        active_later = pg.js(highlighted)
        ActionChains(pg.d).send_keys(Keys.ENTER).perform()
        value = pg.js("return document.activeElement.value")
        time.sleep(0.6)  # nothing pending re-opens the list after the choice
        expanded = pg.js("return document.activeElement.getAttribute('aria-expanded')")
        ActionChains(pg.d).send_keys(Keys.ENTER).perform()
        names = pg.wait_legend(1)
        # The result tabs: arrow keys move between them.
        pg.js("document.getElementById('tab-chart').focus()")
        ActionChains(pg.d).send_keys(Keys.ARROW_RIGHT).perform()
        tab = pg.js("return document.activeElement.id + ':' + document.activeElement.getAttribute('aria-selected')")
        shown = pg.one("#panel-table").is_displayed()
        ok = active == "cpu.usage_user" and active_later == active and value == "cpu.usage_user" \
            and expanded == "false" and names == ["cpu.usage_user"] and tab == "tab-table:true" and shown
        return ok, f"active={active}/{active_later} value={value} expanded={expanded} legend={names} tab={tab}"
    res.run("keyboard only: type, ArrowDown+Enter picks, Enter runs, chart drawn; arrow keys on tabs", keyboard)


def check_auth(res, pg, token, downloads, secret):
    def cancel():
        # Cancel sticks: the status page's polls do not bring the dialog
        # back; "Enter token" does.
        pg.open("/#page=status")
        pg.wait(lambda: pg.one("#token-dialog").is_displayed(), "the token prompt")
        described = pg.js("const t = document.getElementById('token');"
                          "return document.getElementById(t.getAttribute('aria-describedby')).textContent")
        pg.one("#token-cancel").click()
        t0 = time.time()
        reopened = False
        polls = "return performance.getEntriesByType('resource').filter(e => e.name.includes('/api/stats?')" \
                " || e.name.endsWith('/api/stats')).length"
        first = pg.js(polls)
        while time.time() - t0 < 7:
            reopened = reopened or pg.js("return document.getElementById('token-dialog').open")
            time.sleep(0.25)
        polled = pg.js(polls) - first
        pg.shot("token-cancelled.png")
        err = pg.one("#status-error").text
        button = pg.one("#token-enter").is_displayed()
        pg.one("#token-enter").click()
        pg.wait(lambda: pg.one("#token-dialog").is_displayed(), "the prompt again")
        pg.one("#token").send_keys(token)
        pg.one("#token-save").click()
        pg.wait(lambda: pg.css("#status-config tr") and not pg.one("#status-error").is_displayed(), "status with the token")
        gone = not pg.one("#token-enter").is_displayed() and pg.one("#token").get_attribute("value") == ""
        # Every part fails (401): the page polls every 5 s, not faster.
        ok = (not reopened and 1 <= polled <= 2 and button and "Enter token" in err and gone
              and "access token" in described)
        return ok, (f"re-opened={reopened} in 7 s with {polled} polls; error {err!r}; button={button};"
                    f" after saving: button gone and input empty={gone}; described by {described!r}")
    res.run("auth: Cancel sticks (no prompt on the next polls), Enter token opens it again", cancel)

    def prompt():
        pg.js("try { sessionStorage.clear() } catch (e) {}")
        pg.open("/#start=2h-ago&m=sum:cpu.usage_user{host=*}")
        pg.wait(lambda: pg.css("#token") and pg.one("#token").is_displayed(), "the token prompt")
        label = pg.js("const t = document.getElementById('token'); return t.labels[0].textContent")
        pg.shot("token.png")
        pg.one("#token").send_keys(token)
        pg.one("#token-save").click()
        names = pg.wait_legend(4)
        kept = pg.js("return sessionStorage.getItem('hourglass.token')")
        return kept == token and label.strip() and len(names) == 4, f"label={label!r} legend={names}"
    res.run("auth: the page asks for a token, keeps it in sessionStorage, then draws", prompt)

    def not_leaked():
        url = pg.d.current_url
        link = pg.one("#permalink").get_attribute("href")
        f = download_csv(pg, downloads)
        text = f.read_text()
        ok = token not in url and token not in link and token not in text and "cpu.usage_user" in text
        return ok, f"url {url!r}, permalink {link!r}, CSV {len(text)} bytes"
    res.run("auth: the token is not in the URL, the permalink or the CSV", not_leaked)

    def next_pages():
        pg.open("/#page=status")
        pg.wait(lambda: pg.css("#status-config tr") and pg.css("#status-ingest tr[data-protocol]"), "status with the token")
        return not pg.one("#token-dialog").is_displayed(), ""
    res.run("auth: the kept token serves the other pages without asking again", next_pages)

    def secrets():
        # The auth server's tokens_file holds `secret` in its path: a key
        # that looks secret. /api/config masks it, the page shows the mask.
        key = "hourglass.auth.tokens_file"
        status, _, body = http("GET", pg.server.base + "/api/config", token=token)
        api = json.loads(body).get(key) if status == 200 else status
        pg.wait(lambda: pg.css(f'#status-config tr[data-key="{key}"]'), "the config")
        shown = pg.one(f'#status-config tr[data-key="{key}"] td').text
        source = pg.d.page_source
        return api == "********" and shown == "********" and secret not in source, \
            f"/api/config {key}={api!r}, shown {shown!r}, secret in page: {secret in source}"
    res.run("auth: a secret-looking config key is masked by /api/config and on the status page", secrets)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the hourglass binary")
    ap.add_argument("--screenshots", required=True, help="directory for the screenshots")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    ap.add_argument("--chromedriver", default=shutil.which("chromedriver"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    res = Results()
    shots = Path(args.screenshots)
    shots.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="hourglass-ui-"))
    downloads = work / "downloads"
    downloads.mkdir()
    servers = []
    driver = None
    try:
        check_gzip(res)

        # An open server whose queries never time out (the slow one runs
        # until its client goes away).
        open_srv = Server(args.bin, work, "open", "[query]\ntimeout_secs = 0\n"
                          "max_points = 1000000000\nmax_values = 1000000000\n")
        servers.append(open_srv)
        open_srv.start()
        driver = make_driver(args.chromium, args.chromedriver, downloads)
        pg = Page(driver, open_srv, shots)

        def console_clean(name, allow=()):
            bad = pg.console(allow)
            res.check(f"no console errors or CSP reports ({name})", not bad, "; ".join(bad[:5]))

        check_explore_empty(res, pg)
        n = write_data(open_srv)
        print(f"INFO wrote {n} points to {open_srv.base}")

        check_query_page(res, pg)
        console_clean("query page")
        check_chart_data(res, pg)
        check_form(res, pg)
        console_clean("chart data, form")
        check_autocomplete(res, pg)
        check_table_json_csv(res, pg, downloads)
        console_clean("table, JSON, CSV")
        check_explore(res, pg)
        console_clean("explore")
        check_status(res, pg)
        console_clean("status")
        check_accessibility(res, pg)
        console_clean("accessibility runs")
        check_explore_truncated(res, pg)
        console_clean("explore, truncated")
        driver.quit()
        driver = None
        open_srv.stop()

        # tokens_file: a config key that looks secret, its value known.
        secret = "hg-secret-5f0c2a9e"
        auth_srv = Server(args.bin, work, "auth", "[auth]\nenabled = true\n"
                          f'tokens_file = "{work / "auth" / (secret + ".json")}"\n')
        servers.append(auth_srv)
        reader = auth_srv.token("ui", "read")
        writer = auth_srv.token("loader", "write")
        auth_srv.start()
        status, headers, _ = http("GET", auth_srv.base + "/api/suggest?type=metrics&q=")
        challenge = {k.lower(): v for k, v in headers.items()}.get("www-authenticate", "")
        res.check("auth server asks for a token (401, Bearer challenge)",
                  status == 401 and challenge.startswith("Bearer"), f"{status} {challenge}")
        page_status, _, _ = http("GET", auth_srv.base + "/")
        res.check("the page itself opens without a token", page_status == 200, str(page_status))
        write_data(auth_srv, token=writer)
        driver = make_driver(args.chromium, args.chromedriver, downloads)
        pg = Page(driver, auth_srv, shots)
        check_auth(res, pg, reader, downloads, secret)
        bad = pg.console(allow=("status of 401",))
        res.check("no console errors or CSP reports (auth; 401s expected)", not bad, "; ".join(bad[:5]))
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        res.check("test run", False, f"{type(e).__name__}: {e}")
    finally:
        if driver is not None:
            try:
                driver.quit()
            except Exception:  # noqa: BLE001
                pass
        for s in servers:
            s.stop()
        if args.keep:
            print(f"INFO kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(f"INFO screenshots in {shots}: {', '.join(sorted(p.name for p in shots.glob('*.png')))}")
    print(f"{res.passed} passed, {res.failed} failed")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
