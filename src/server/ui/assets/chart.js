// The time-series chart: uPlot (vendor/uplot, loaded by index.html) over
// the union of the series' timestamps, with our own legend (names from
// tags, click to hide a series, values under the cursor). Drag to zoom,
// double-click to reset; follows the width of its box.

import { fmtTime, tzLabel } from './util.js';

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b',
  '#e377c2', '#17becf', '#7f7f7f', '#bcbd22', '#3b4cc0', '#b40426', '#006d2c', '#a55194'];

export function color(i) {
  if (i < PALETTE.length) return PALETTE[i];
  return `hsl(${(i * 137.508) % 360} 65% 42%)`;
}

// At most this many cells (x values × series) are drawn: the union of
// jittered millisecond timestamps of many series would otherwise explode.
export const MAX_CELLS = 4e6;
// Coarser grids tried, in order, when the exact timestamps do not fit.
const GRIDS = [1e3, 1e4, 6e4, 3e5, 9e5, 36e5, 216e5, 864e5];

// series: [{name, ts: Float64Array|number[] (ms), vals: (number|null)[]}]
// -> { data: [xs (seconds), ys...], step }, in uPlot's convention: where a
// series has no point at a timestamp the cell is undefined (spanned by the
// line); a null or NaN from the API (fill=null, fill=nan) is null (a gap,
// from the point before to the point after).
// step is 0, or the grid (ms) timestamps were rounded down to because
// union × series would exceed maxCells (the last value of a series in a
// slot is kept).
export function align(series, maxCells = MAX_CELLS) {
  let total = 0;
  for (const s of series) total += s.ts.length;
  const all = new Float64Array(total);
  let o = 0;
  for (const s of series) { all.set(s.ts, o); o += s.ts.length; }
  all.sort();
  const n = Math.max(1, series.length);
  // Distinct slots of the sorted timestamps on grid g (0: exact).
  const slots = (g) => {
    let c = 0, prev = NaN;
    for (let i = 0; i < all.length; i++) {
      const t = g ? Math.floor(all[i] / g) * g : all[i];
      if (t !== prev) { c++; prev = t; }
    }
    return c;
  };
  let step = 0;
  if (slots(0) * n > maxCells) {
    step = GRIDS.find(g => slots(g) * n <= maxCells) || 0;
    if (!step) for (step = GRIDS[GRIDS.length - 1] * 10; slots(step) * n > maxCells; step *= 10);
  }
  const at = step ? (t => Math.floor(t / step) * step) : (t => t);
  const xs = [];
  for (let i = 0; i < all.length; i++) {
    const t = at(all[i]);
    if (!xs.length || xs[xs.length - 1] !== t) xs.push(t);
  }
  const index = new Map();
  xs.forEach((t, i) => index.set(t, i));
  const data = [xs.map(t => t / 1000)];
  for (const s of series) {
    const ys = new Array(xs.length); // holes read as undefined
    const nulls = [];
    for (let i = 0; i < s.ts.length; i++) {
      const v = s.vals[i];
      const j = index.get(at(s.ts[i]));
      if (v == null || Number.isNaN(v)) { ys[j] = null; nulls.push(j); } else ys[j] = v;
    }
    // A gap reaches the series' points on either side: the holes next to
    // a null are null too (uPlot.join's NULL_EXPAND).
    for (const j of nulls) {
      if (ys[j] !== null) continue; // a later value took the slot
      for (let k = j - 1; k >= 0 && ys[k] === undefined; k--) ys[k] = null;
      for (let k = j + 1; k < ys.length && ys[k] === undefined; k++) ys[k] = null;
    }
    data.push(ys);
  }
  return { data, step };
}

// "10 s", "1 min", "6 h", "1 d".
export function fmtStep(ms) {
  if (ms % 864e5 === 0) return ms / 864e5 + ' d';
  if (ms % 36e5 === 0) return ms / 36e5 + ' h';
  if (ms % 6e4 === 0) return ms / 6e4 + ' min';
  return ms / 1e3 + ' s';
}

const pad = n => String(n).padStart(2, '0');

// Axis numbers: 1.5k, 2M, 0.25, 1e-5.
function fmtAxis(v) {
  const a = Math.abs(v);
  if (a >= 1000) {
    const units = ['k', 'M', 'G', 'T', 'P', 'E'];
    let i = -1;
    while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
    return +v.toPrecision(4) + units[i];
  }
  if (a !== 0 && a < 1e-3) return v.toExponential(1);
  return String(+v.toPrecision(4));
}

// Time ticks in 24 h local time, the date under the first tick of a day.
function timeTicks(u, splits, ai, space, incr) {
  let prevDay = null;
  return splits.map(t => {
    const d = new Date(t * 1000);
    const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    let s;
    if (incr >= 86400) s = day;
    else {
      s = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
      if (incr < 60) s += ':' + pad(d.getSeconds());
      if (incr < 1) s += '.' + String(d.getMilliseconds()).padStart(3, '0');
      if (day !== prevDay) s += '\n' + day;
    }
    prevDay = day;
    return s;
  });
}

function fmtNum(v) {
  if (v == null || Number.isNaN(v)) return '–';
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
  return String(+v.toPrecision(6));
}

export class Chart {
  constructor(box, legend, onZoom) {
    this.box = box;
    this.legend = legend;
    this.onZoom = onZoom;
    this.u = null;
    this.names = [];
    this.ro = new ResizeObserver(() => this.resize());
    this.ro.observe(box);
  }

  size() {
    const w = Math.max(300, this.box.clientWidth);
    const h = Math.max(220, Math.min(440, Math.round(window.innerHeight * 0.42)));
    return { width: w, height: h };
  }

  resize() {
    if (!this.u) return;
    const s = this.size();
    if (s.width !== this.u.width || s.height !== this.u.height) this.u.setSize(s);
  }

  destroy() {
    if (this.u) this.u.destroy();
    this.u = null;
    this.full = null;
    this.box.replaceChildren();
    this.legend.replaceChildren();
    this.box.dataset.series = '0';
    const t = document.getElementById('cursor-time');
    if (t) t.textContent = '';
  }

  // series: [{name, ts, vals}]; keep: carry the zoom (x range) and the
  // series hidden in the legend (by name) over from the chart shown now
  // (auto-refresh). Returns { step } (see align).
  draw(series, keep) {
    let prev = null;
    if (keep && this.u) {
      prev = {
        hidden: new Set(this.u.series.slice(1).filter(s => !s.show).map(s => s.label)),
        zoom: this.zoomed(this.u),
      };
    }
    this.destroy();
    this.names = series.map(s => s.name);
    this.box.dataset.series = String(series.length);
    this.box.setAttribute('aria-label', `Chart of ${series.length} series`);
    if (!series.length) return { step: 0 };
    if (typeof window.uPlot !== 'function') throw new Error('The chart library did not load');
    const { data, step } = align(series);
    const xs = data[0];
    const full = [xs[0], xs[xs.length - 1]];
    const dark = matchMedia('(prefers-color-scheme: dark)').matches;
    const axisStroke = dark ? '#c9d1d9' : '#333';
    const grid = { stroke: dark ? '#30363d' : '#e5e7eb', width: 1 };
    const hidden = prev ? prev.hidden : new Set();
    const opts = {
      ...this.size(),
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: true }, focus: { prox: 16 } },
      focus: { alpha: 0.35 },
      scales: { x: { time: true } },
      axes: [
        {
          stroke: axisStroke, grid, ticks: grid, space: 70, values: timeTicks,
          // The ticks are in the browser's time zone: say which.
          label: `Time (${tzLabel(full[1] * 1000)})`, labelSize: 18, labelFont: '12px system-ui, sans-serif',
        },
        {
          stroke: axisStroke, grid, ticks: grid, values: (u, vals) => vals.map(fmtAxis),
          size: (u, vals) => Math.max(40, 18 + 7.5 * Math.max(0, ...(vals || []).map(v => v.length))),
        },
      ],
      series: [{}].concat(series.map((s, i) => ({
        label: s.name,
        stroke: color(i),
        width: 1.5,
        // null (fill=null, NaN) is a gap; undefined (no point there) is spanned.
        spanGaps: false,
        show: !hidden.has(s.name),
      }))),
      hooks: {
        setCursor: [u => this.cursor(u)],
        setScale: [(u, key) => { if (key === 'x' && this.onZoom && this.u === u) this.onZoom(this.zoomed(u)); }],
      },
    };
    this.full = full;
    this.u = new window.uPlot(opts, data, this.box);
    this.u.over.addEventListener('dblclick', () => this.reset());
    this.buildLegend(series, hidden);
    if (prev && prev.zoom) {
      const min = Math.max(prev.zoom[0] / 1000, full[0]);
      const max = Math.min(prev.zoom[1] / 1000, full[1]);
      if (max > min) this.u.setScale('x', { min, max });
    }
    // When the chart was drawn, for bench/ui.sh.
    performance.mark('hourglass:chart-drawn');
    return { step };
  }

  zoomed(u) {
    const x = u.scales.x;
    if (!this.full || x.min == null) return null;
    return (x.min > this.full[0] || x.max < this.full[1]) ? [x.min * 1000, x.max * 1000] : null;
  }

  reset() {
    if (this.u && this.full) this.u.setScale('x', { min: this.full[0], max: this.full[1] });
  }

  buildLegend(series, hidden) {
    const frag = document.createDocumentFragment();
    series.forEach((s, i) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'legend-item';
      b.dataset.series = s.name;
      b.setAttribute('aria-pressed', String(!hidden.has(s.name)));
      b.title = 'Show or hide this series (shift-click: only this one)';
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = color(i);
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = s.name;
      const val = document.createElement('span');
      val.className = 'value';
      b.append(sw, name, val);
      b.addEventListener('click', (e) => this.toggle(i, e.shiftKey));
      frag.append(b);
    });
    this.legend.replaceChildren(frag);
  }

  toggle(i, only) {
    const u = this.u;
    if (!u) return;
    const items = this.legend.querySelectorAll('.legend-item');
    if (only) {
      items.forEach((b, j) => { u.setSeries(j + 1, { show: j === i }); b.setAttribute('aria-pressed', String(j === i)); });
    } else {
      const show = !u.series[i + 1].show;
      u.setSeries(i + 1, { show });
      items[i].setAttribute('aria-pressed', String(show));
    }
  }

  cursor(u) {
    const idx = u.cursor.idx;
    const t = document.getElementById('cursor-time');
    if (t) t.textContent = idx == null ? '' : fmtTime(Math.round(u.data[0][idx] * 1000));
    const vals = this.legend.querySelectorAll('.value');
    vals.forEach((el, i) => {
      const v = idx == null ? undefined : u.data[i + 1][idx];
      el.textContent = v === undefined ? '' : fmtNum(v);
    });
  }
}
