// The query page: a form of one or more OpenTSDB queries (`m` strings),
// a time range, auto-refresh; the answer as a chart, a table or JSON, a
// CSV download and a link that reproduces the view.

import { getJSON, request, url, showError } from './api.js';
import * as mq from './mquery.js';
import { combobox, suggestSource } from './combobox.js';
import { Chart, fmtStep } from './chart.js';
import { el, fmtTime, tabs, tzLabel, uid } from './util.js';

const TABLE_CAP = 10000;
const JSON_CAP = 4 << 20;
const FILLS = ['', 'none', 'nan', 'null', 'zero'];
let aggregators = ['sum', 'avg', 'min', 'max', 'count', 'none', 'zimsum', 'mimmin', 'mimmax',
  'first', 'last', 'dev', 'median', 'p50', 'p90', 'p95', 'p99', 'p999'];

const $ = (id) => document.getElementById(id);
const metricSource = suggestSource(getJSON, 'metrics');
const tagkSource = suggestSource(getJSON, 'tagk');
const tagvSource = suggestSource(getJSON, 'tagv');

function fillSelect(sel, names, value) {
  const list = names.includes(value) || value === undefined ? names : names.concat([value]);
  sel.replaceChildren(...list.map(n => new Option(n, n)));
  if (value !== undefined) sel.value = value;
}

// autoreload from a link: whole seconds only. 0, negative, fractional or
// junk values (autoreload=-5, 1.5, x) turn it off; 1 to 4 become 5 s, the
// shortest period we poll with; more than a day becomes a day.
function autoreloadSecs(v) {
  if (!/^[0-9]+$/.test(v || '')) return '';
  const n = Number(v);
  return n ? String(Math.min(86400, Math.max(5, n))) : '';
}

// What the form refuses in a field because the m string would not say
// what the field says: `,` `{` `}` split or close the filters, `:` the
// parts of m. `parens`: the field may hold them inside balanced (...)
// (filter functions such as regexp(a{2,3}); literal_or(a|b) and
// wildcard(a*) have none of them anyway). Returns a message or null.
function badValue(v, chars, { parens = false, spaces = false } = {}) {
  let depth = 0;
  for (const c of v) {
    if (parens && c === '(') depth++;
    else if (parens && c === ')') { if (--depth < 0) return 'has a “)” without its “(”'; }
    else if (chars.includes(c) && depth === 0) return `cannot contain “${c}”`;
    else if (!spaces && /\s/.test(c) && (depth === 0 || !parens)) return 'cannot contain spaces';
  }
  return depth > 0 ? 'has a “(” without its “)”' : null;
}

// A labelled field: <div class=field><label for=id>text</label>control</div>
// (the label does not wrap the control: a combobox's listbox is beside the
// input and must not become part of its name).
function field(text, control, cls) {
  control.id = uid();
  return el('div', { className: 'field ' + (cls || '') }, [el('label', { htmlFor: control.id, textContent: text }), control]);
}

// ---- one query row ----

class QueryRow {
  constructor(page, q) {
    this.page = page;
    const n = page.rows.length + 1;
    this.root = el('fieldset', { className: 'query-row' });
    this.legendEl = el('legend', { textContent: `Query ${n}` });

    this.metric = el('input', { className: 'metric', placeholder: 'metric name', name: 'metric' });
    this.agg = el('select', { className: 'agg', name: 'aggregator' });
    this.dsInterval = el('input', { className: 'ds-interval', placeholder: 'e.g. 1m', size: 6, spellcheck: false });
    this.dsFn = el('select', { className: 'ds-fn' });
    this.dsFill = el('select', { className: 'ds-fill' });
    FILLS.forEach(f => this.dsFill.append(new Option(f || 'default', f)));
    this.rate = el('input', { type: 'checkbox', className: 'rate' });
    this.counter = el('input', { type: 'checkbox', className: 'counter' });
    this.counterMax = el('input', { className: 'counter-max', size: 8, placeholder: 'max', spellcheck: false });
    this.resetValue = el('input', { className: 'reset-value', size: 6, placeholder: 'reset', spellcheck: false });
    this.rawInput = el('input', { className: 'raw-m', spellcheck: false });
    this.rawToggle = el('button', { type: 'button', className: 'quiet raw-toggle', textContent: 'Edit as text' });
    this.removeBtn = el('button', { type: 'button', className: 'quiet remove-query', textContent: '✕' });
    this.filtersBox = el('div', { className: 'filters' });
    this.addFilterBtn = el('button', { type: 'button', className: 'quiet add-filter', textContent: '+ Tag filter' });

    const lab = field;
    this.rateOpts = el('span', { className: 'rate-opts' }, [
      el('label', { className: 'inline' }, [this.counter, ' Counter']),
      lab('Counter max', this.counterMax, 'counter-opt'),
      lab('Reset value', this.resetValue, 'counter-opt'),
    ]);
    this.formBox = el('div', { className: 'qfields' }, [
      lab('Metric', this.metric, 'grow'),
      lab('Aggregator', this.agg),
      lab('Downsample', this.dsInterval),
      lab('Function', this.dsFn),
      lab('Fill', this.dsFill),
      el('label', { className: 'inline rate-label' }, [this.rate, ' Rate']),
      this.rateOpts,
    ]);
    this.rawBox = lab('Query (OpenTSDB m syntax)', this.rawInput, 'grow raw');
    this.rawBox.hidden = true;
    this.root.append(this.legendEl,
      el('div', { className: 'qhead' }, [this.formBox, this.rawBox,
        el('span', { className: 'qbtns' }, [this.rawToggle, this.removeBtn])]),
      this.filtersBox, el('div', { className: 'filter-actions' }, [this.addFilterBtn]));

    combobox(this.metric, metricSource, { listLabel: 'Metric names' });
    this.filters = [];
    this.renumber(n);
    this.refreshAggregators();
    this.rate.addEventListener('change', () => this.syncRate());
    this.counter.addEventListener('change', () => this.syncRate());
    this.addFilterBtn.addEventListener('click', () => { const f = this.addFilter({ key: '', value: '', groupBy: true }); f.key.focus(); });
    this.removeBtn.addEventListener('click', () => page.removeRow(this));
    this.rawToggle.addEventListener('click', () => this.toggleRaw());
    this.set(q || mq.emptyQuery());
  }

  renumber(n) {
    this.legendEl.textContent = `Query ${n}`;
    this.removeBtn.setAttribute('aria-label', `Remove query ${n}`);
    this.removeBtn.title = `Remove query ${n}`;
  }

  refreshAggregators() {
    fillSelect(this.agg, aggregators, this.agg.value || 'sum');
    fillSelect(this.dsFn, aggregators.filter(a => a !== 'none'), this.dsFn.value || 'avg');
  }

  syncRate() {
    this.rateOpts.hidden = !this.rate.checked;
    for (const c of this.rateOpts.querySelectorAll('.counter-opt')) c.hidden = !this.counter.checked;
  }

  addFilter(f) {
    const key = el('input', { className: 'tagk', placeholder: 'tag key', size: 10, spellcheck: false, value: f.key });
    const value = el('input', { className: 'tagv', placeholder: '*, a|b, wildcard(a*)', size: 16, spellcheck: false, value: f.value });
    const group = el('input', { type: 'checkbox', className: 'groupby', checked: f.groupBy !== false });
    const rm = el('button', { type: 'button', className: 'quiet', textContent: '✕', title: 'Remove this tag filter' });
    const row = el('div', { className: 'filter' }, [
      field('Tag key', key),
      field('Value', value),
      el('label', { className: 'inline' }, [group, ' Group by']),
      rm,
    ]);
    const entry = { row, key, value, group, rm };
    this.filters.push(entry);
    this.filtersBox.append(row);
    combobox(key, tagkSource, { listLabel: 'Tag keys' });
    // Values: complete the last alternative of a|b|c.
    combobox(value, tagvSource, {
      listLabel: 'Tag values',
      term: v => v.slice(v.lastIndexOf('|') + 1),
      apply: (v, c) => v.slice(0, v.lastIndexOf('|') + 1) + c,
    });
    this.labelFilters();
    rm.addEventListener('click', () => {
      this.filters = this.filters.filter(x => x !== entry);
      row.remove();
      this.labelFilters();
      this.addFilterBtn.focus();
    });
    return entry;
  }

  labelFilters() {
    this.filters.forEach((f, i) => f.rm.setAttribute('aria-label', `Remove tag filter ${i + 1}`));
  }

  set(q) {
    this.q = q;
    this.filters.forEach(f => f.row.remove());
    this.filters = [];
    if (q.raw != null) {
      this.rawInput.value = q.raw;
      this.setRawMode(true);
      return;
    }
    this.setRawMode(false);
    this.metric.value = q.metric;
    fillSelect(this.agg, aggregators, q.aggregator);
    const fns = aggregators.filter(a => a !== 'none');
    fillSelect(this.dsFn, fns, q.downsample.fn || 'avg');
    this.dsInterval.value = q.downsample.interval;
    this.dsFill.value = q.downsample.fill;
    this.rate.checked = q.rate;
    this.counter.checked = q.counter;
    this.counterMax.value = q.counterMax;
    this.resetValue.value = q.resetValue;
    this.syncRate();
    q.filters.forEach(f => this.addFilter(f));
  }

  setRawMode(raw) {
    this.raw = raw;
    this.formBox.hidden = raw;
    this.rawBox.hidden = !raw;
    this.filtersBox.hidden = raw;
    this.addFilterBtn.hidden = raw;
    this.rawToggle.textContent = raw ? 'Edit as form' : 'Edit as text';
    this.rawToggle.setAttribute('aria-pressed', String(raw));
  }

  toggleRaw() {
    if (!this.raw) {
      this.rawInput.value = this.m();
      this.setRawMode(true);
      this.rawInput.focus();
      return;
    }
    const q = mq.parseM(this.rawInput.value.trim());
    if (q.raw != null) {
      this.page.error({ message: 'This query cannot be shown as a form; it stays as text.', details: q.raw });
      return;
    }
    this.set(q);
    this.metric.focus();
  }

  model() {
    if (this.raw) return Object.assign(mq.emptyQuery(), { raw: this.rawInput.value.trim() });
    return {
      aggregator: this.agg.value,
      metric: this.metric.value.trim(),
      downsample: { interval: this.dsInterval.value.trim(), fn: this.dsFn.value, fill: this.dsFill.value },
      rate: this.rate.checked,
      counter: this.rate.checked && this.counter.checked,
      counterMax: this.counter.checked ? this.counterMax.value.trim() : '',
      resetValue: this.counter.checked ? this.resetValue.value.trim() : '',
      filters: this.filters.map(f => ({ key: f.key.value.trim(), value: f.value.value.trim(), groupBy: f.group.checked })),
      _braces: this.q && this.q._braces,
      raw: null,
    };
  }

  // Trims the fields (writing the trimmed text back: what is shown is what
  // runs) and checks that each can be written into m. Returns null or
  // { input, message } for the first field that cannot.
  validate(n) {
    if (this.raw) return null;
    const trim = (input) => { const v = input.value.trim(); if (v !== input.value) input.value = v; return v; };
    const checks = [
      [this.metric, 'Metric', ',{}=:()'],
      [this.dsInterval, 'Downsample', ',{}=:()'],
    ];
    if (this.rate.checked && this.counter.checked) {
      checks.push([this.counterMax, 'Counter max', ',{}=:()'], [this.resetValue, 'Reset value', ',{}=:()']);
    }
    this.filters.forEach((f, i) => {
      checks.push([f.key, `Tag key ${i + 1}`, ',{}=:()'], [f.value, `Tag value ${i + 1}`, ',{}', { parens: true }]);
    });
    let bad = null;
    for (const [input, name, chars, o] of checks) {
      const v = trim(input);
      const why = v && badValue(v, chars, o);
      if (why) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
      if (why && !bad) bad = { input, message: `Query ${n}, ${name}: “${v}” ${why}. Use “Edit as text” for what the form cannot say.` };
    }
    return bad;
  }

  // The m string, or '' when the row names no metric.
  m() {
    const q = this.model();
    if (q.raw != null) return q.raw;
    return q.metric ? mq.buildM(q) : '';
  }
}

// ---- the page ----

export class QueryPage {
  constructor(onHash) {
    this.onHash = onHash; // called with the new fragment after each run
    this.rows = [];
    this.pairs = [];
    this.result = null;
    this.view = 'chart';
    this.ctl = null;
    this.timer = 0;
    this.active = false;
    this.chart = new Chart($('chart'), $('legend'), r => this.zoomed(r));
    this.tabs = tabs(document.querySelector('#page-query [role=tablist]'), id => this.setView(id.replace('tab-', '')));

    $('query-form').addEventListener('submit', (e) => { e.preventDefault(); this.run(true); });
    $('add-query').addEventListener('click', () => { const r = this.addRow(); r.metric.focus(); });
    $('autoreload').addEventListener('change', () => { this.schedule(); this.writeHash(); });
    document.querySelectorAll('#page-query .quick button').forEach(b => b.addEventListener('click', () => {
      $('start').value = b.dataset.range + '-ago';
      $('end').value = '';
      this.run(true);
    }));
    $('start').addEventListener('input', () => this.markQuick());
    $('end').addEventListener('input', () => this.markQuick());
    $('download-csv').addEventListener('click', () => this.downloadCSV());
    $('copy-link').addEventListener('click', () => this.copyLink());
    $('zoom-reset').addEventListener('click', () => this.chart.reset());
    $('zoom-apply').addEventListener('click', () => {
      if (!this.zoom) return;
      $('start').value = String(Math.floor(this.zoom[0] / 1000));
      $('end').value = String(Math.ceil(this.zoom[1] / 1000));
      this.run(true);
    });
    document.addEventListener('visibilitychange', () => this.schedule());
    getJSON('/api/aggregators').then(list => {
      if (Array.isArray(list) && list.length) {
        aggregators = list;
        this.rows.forEach(r => r.refreshAggregators());
      }
    }).catch(() => { /* the built-in list stays */ });
  }

  addRow(q) {
    const r = new QueryRow(this, q);
    this.rows.push(r);
    $('queries').append(r.root);
    this.syncRemove();
    return r;
  }

  removeRow(r) {
    this.rows = this.rows.filter(x => x !== r);
    r.root.remove();
    if (!this.rows.length) this.addRow();
    this.rows.forEach((x, i) => x.renumber(i + 1));
    this.syncRemove();
    this.rows[this.rows.length - 1].metric.focus();
  }

  syncRemove() {
    this.rows.forEach(r => { r.removeBtn.hidden = this.rows.length < 2; });
  }

  // Loads the page's state from URL pairs; runs when there is a query.
  show(pairs) {
    this.active = true;
    const same = mq.formatParams(pairs) === mq.formatParams(this.pairs) && this.result;
    this.pairs = pairs;
    if (!same) {
      $('start').value = mq.get(pairs, 'start') ?? '1h-ago';
      $('end').value = mq.get(pairs, 'end') ?? '';
      const ar = autoreloadSecs(mq.get(pairs, 'autoreload'));
      const sel = $('autoreload');
      if (ar && ![...sel.options].some(o => o.value === ar)) sel.append(new Option(ar + 's', ar));
      sel.value = ar;
      const ms = mq.getAll(pairs, 'm');
      this.rows.forEach(r => r.root.remove());
      this.rows = [];
      (ms.length ? ms : ['']).forEach(m => this.addRow(m ? mq.parseM(m) : undefined));
      const view = mq.get(pairs, 'view');
      this.view = ['chart', 'table', 'json'].includes(view) ? view : 'chart';
      this.tabs.select('tab-' + this.view, { notify: false });
      this.markQuick();
      if (ms.length) this.run(false);
    }
    this.schedule();
  }

  hide() {
    this.active = false;
    clearTimeout(this.timer);
  }

  markQuick() {
    const s = $('start').value.trim();
    document.querySelectorAll('#page-query .quick button').forEach(b => {
      b.setAttribute('aria-pressed', String(!$('end').value.trim() && s === b.dataset.range + '-ago'));
    });
  }

  // The URL pairs of the form, keeping keys we do not know (OpenTSDB GUI's
  // o, wxh, yrange, key, ...).
  formPairs() {
    let p = this.pairs.filter(([k]) => k !== 'page');
    p = mq.setAll(p, 'start', [$('start').value.trim()]);
    p = mq.setAll(p, 'end', [$('end').value.trim()]);
    p = mq.setAll(p, 'm', this.rows.map(r => r.m()).filter(Boolean));
    p = mq.setAll(p, 'autoreload', [$('autoreload').value]);
    p = mq.setAll(p, 'view', [this.view === 'chart' ? '' : this.view]);
    return p;
  }

  // push: a new history entry (a run the user asked for), else replaced.
  writeHash(push) {
    this.pairs = this.formPairs();
    const frag = mq.formatParams(this.pairs);
    const link = location.origin + '/#' + frag;
    $('permalink').href = link;
    if (location.hash.replace(/^#/, '') !== frag || location.search) {
      history[push ? 'pushState' : 'replaceState'](null, '', '/#' + frag);
    }
    this.onHash(frag);
  }

  error(err) { showError($('query-error'), err); }

  // user: run by the user (a new history entry); refresh: by auto-refresh
  // (the chart keeps its zoom and hidden series, nothing is announced).
  async run(user, refresh = false) {
    // Every row validated (each marks its own fields), the first error shown.
    const bad = this.rows.map((r, i) => r.validate(i + 1)).find(Boolean);
    if (bad) {
      this.error({ message: bad.message });
      if (user) bad.input.focus();
      this.schedule();
      return;
    }
    const ms = this.rows.map(r => r.m()).filter(Boolean);
    this.markQuick();
    this.writeHash(user);
    this.schedule();
    if (!ms.length) {
      this.error({ message: 'Enter a metric name.' });
      this.rows[0].metric.focus();
      return;
    }
    const start = $('start').value.trim() || '1h-ago';
    const end = $('end').value.trim();
    const base = [['start', start]];
    if (end) base.push(['end', end]);
    if (this.ctl) this.ctl.abort();
    const ctl = this.ctl = new AbortController();
    const t0 = performance.now();
    const status = $('query-status');
    status.textContent = 'Running…';
    if (!refresh) this.announce('Running…');
    $('run').setAttribute('aria-busy', 'true');
    // One request per query, in parallel: the answers concatenated are the
    // answer of one request with every m, and each series is known to be
    // of its query. A failed query does not hide the others.
    const settled = await Promise.allSettled(ms.map(async m => {
      const resp = await request(url('/api/query', base.concat([['m', m], ['ms', null]])), { signal: ctl.signal });
      return resp.text();
    }));
    if (ctl !== this.ctl) return;
    this.ctl = null;
    $('run').removeAttribute('aria-busy');
    const took = Math.round(performance.now() - t0);
    const errors = [];
    const answers = [];
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') answers.push({ m: ms[i], text: r.value });
      else if (r.reason.name !== 'AbortError') {
        const e = r.reason;
        errors.push(ms.length > 1 ? { status: e.status, message: `Query ${i + 1}: ${e.message}`, details: e.details } : e);
      }
    });
    try {
      if (answers.length) this.setResult(answers, took, refresh);
    } catch (e) {
      errors.push(e);
    }
    if (errors.length) {
      const e = errors[0];
      this.error(errors.length > 1 ? { status: e.status, message: e.message,
        details: [e.details, ...errors.slice(1).map(x => x.message)].filter(Boolean).join('\n') } : e);
      if (!answers.length) status.textContent = 'The query failed.';
      if (!refresh && !answers.length) this.announce('');
      if (user) $('query-error').scrollIntoView({ block: 'nearest' });
    } else this.error(null);
  }

  // What a screen reader hears (#query-announce): user-run queries only;
  // errors are announced by the #query-error alert.
  announce(text) { $('query-announce').textContent = text; }

  setResult(answers, took, refresh) {
    const data = [];
    const series = [];
    let points = 0;
    for (const a of answers) {
      const list = JSON.parse(a.text);
      if (!Array.isArray(list)) continue;
      // What comes before the metric: "sum:1m-avg:" names a query.
      const prefix = mq.mPrefix(a.m);
      for (const s of list) {
        data.push(s);
        const entries = Object.entries(s.dps || {});
        const ts = new Float64Array(entries.length);
        const vals = new Array(entries.length);
        entries.forEach(([t, v], i) => {
          ts[i] = Number(t);
          vals[i] = typeof v === 'number' ? v : v === null ? null : Number(v); // "NaN"
        });
        points += entries.length;
        series.push({ name: mq.seriesName(s), prefix, ts, vals, tags: s.tags || {}, metric: s.metric });
      }
    }
    // Names from tags; a name two queries share gets its query's prefix.
    const count = new Map();
    series.forEach(s => count.set(s.name, (count.get(s.name) || 0) + 1));
    const seen = new Map();
    for (const s of series) {
      if (count.get(s.name) > 1) s.name = s.prefix + s.name;
      const n = (seen.get(s.name) || 0) + 1;
      seen.set(s.name, n);
      if (n > 1) s.name += ` #${n}`;
    }
    this.result = { data, texts: answers.map(a => a.text), series, points, took, refresh };
    this.rendered = {};
    const text = `${series.length} series, ${points} points in ${took} ms`;
    $('query-status').textContent = text;
    if (!refresh) this.announce(text);
    $('download-csv').disabled = !series.length;
    $('chart-empty').hidden = series.length > 0;
    if (!series.length) $('chart-empty').textContent = 'No data in this time range.';
    this.render();
  }

  setView(view) {
    this.view = view;
    if (this.result) this.render();
    if (this.active && this.rows.length) this.writeHash();
  }

  render() {
    const r = this.result;
    if (!r || this.rendered[this.view]) return;
    this.rendered[this.view] = true;
    if (this.view === 'chart') {
      $('zoom-note').hidden = true;
      const note = $('chart-note');
      note.hidden = true;
      try {
        // An auto-refresh keeps the zoom and the hidden series.
        const { step } = this.chart.draw(r.series, r.refresh);
        if (step) {
          note.textContent = `The chart aligns timestamps to ${fmtStep(step)} for drawing (too many distinct times to draw); the table and the CSV keep the exact times.`;
          note.hidden = false;
        }
      } catch (e) { this.error(e); }
    } else if (this.view === 'table') this.renderTable(r);
    else this.renderJSON(r);
  }

  renderTable(r) {
    const tbody = $('table').tBodies[0];
    const last = Math.max(0, ...r.series.map(s => s.ts.length ? s.ts[s.ts.length - 1] : 0));
    $('table-time').textContent = `Time (${tzLabel(last || Date.now())})`;
    const frag = document.createDocumentFragment();
    let n = 0;
    outer: for (const s of r.series) {
      for (let i = 0; i < s.ts.length; i++) {
        if (n >= TABLE_CAP) break outer;
        const v = s.vals[i];
        const tr = document.createElement('tr');
        tr.dataset.series = s.name;
        tr.dataset.ts = String(s.ts[i]);
        tr.dataset.value = String(v);
        const c1 = document.createElement('td'); c1.textContent = s.name;
        const c2 = document.createElement('td'); c2.textContent = fmtTime(s.ts[i]);
        const c3 = document.createElement('td'); c3.className = 'num'; c3.textContent = String(v);
        tr.append(c1, c2, c3);
        frag.append(tr);
        n++;
      }
    }
    tbody.replaceChildren(frag);
    const note = $('table-note');
    note.hidden = r.points <= TABLE_CAP;
    note.textContent = `Showing the first ${TABLE_CAP.toLocaleString()} of ${r.points.toLocaleString()} points. Download the CSV for all of them.`;
  }

  renderJSON(r) {
    const note = $('json-note');
    const size = r.texts.reduce((n, t) => n + t.length, 0);
    if (size > JSON_CAP) {
      const text = r.texts.length === 1 ? r.texts[0] : '[' + r.texts.map(t => t.slice(1, -1)).filter(Boolean).join(',') + ']';
      $('json').textContent = text.slice(0, JSON_CAP);
      note.textContent = `The response is ${(size / 1048576).toFixed(1)} MiB; the first 4 MiB are shown as sent.`;
      note.hidden = false;
    } else {
      $('json').textContent = JSON.stringify(r.data, null, 2);
      note.hidden = true;
    }
  }

  zoomed(range) {
    this.zoom = range;
    $('zoom-note').hidden = !range;
    if (range) $('zoom-range').textContent = `Zoomed to ${fmtTime(range[0])} – ${fmtTime(range[1])}.`;
  }

  schedule() {
    clearTimeout(this.timer);
    const secs = Number($('autoreload').value);
    if (!this.active || !secs || document.visibilityState === 'hidden') return;
    this.timer = setTimeout(() => { if (!this.ctl) this.run(false, true); else this.schedule(); }, secs * 1000);
  }

  downloadCSV() {
    const r = this.result;
    if (!r) return;
    const keys = [...new Set(r.series.flatMap(s => Object.keys(s.tags)))].sort();
    // Text cells a spreadsheet would run as a formula (=, +, @, tab, CR, or
    // - and not a plain number) get a leading '; then CSV quoting.
    const q = v => {
      v = String(v);
      if (/^[=+@\t\r]/.test(v) || /^-(?!(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?$)/i.test(v)) v = "'" + v;
      return /[",\n\r]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
    };
    // Tag columns are tag:<key>: a tag key "series" or "value" is no header twice.
    const lines = [['series', 'timestamp', 'value', 'metric', ...keys.map(k => 'tag:' + k)].map(q).join(',')];
    for (const s of r.series) {
      const tail = [s.metric, ...keys.map(k => s.tags[k] ?? '')].map(q).join(',');
      const name = q(s.name);
      for (let i = 0; i < s.ts.length; i++) {
        lines.push(`${name},${new Date(s.ts[i]).toISOString()},${s.vals[i] ?? ''},${tail}`);
      }
    }
    const blob = new Blob([lines.join('\n') + '\n'], { type: 'text/csv' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'hourglass-' + new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19) + '.csv';
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  }

  async copyLink() {
    const link = $('permalink').href;
    const btn = $('copy-link');
    try {
      await navigator.clipboard.writeText(link);
      btn.textContent = 'Copied';
    } catch {
      window.prompt('Copy this link:', link);
    }
    setTimeout(() => { btn.textContent = 'Copy link'; }, 1500);
  }
}

