// The explore page: metrics by series count (the series index, via
// /api/stats/cardinality), and for one metric its tag keys with their top
// values and its series (/api/search/lookup).

import { getJSON, url, showError } from './api.js';
import * as mq from './mquery.js';
import { el, fmtInt } from './util.js';

const $ = (id) => document.getElementById(id);
const SERIES_SHOWN = 100;

function chartLink(m, start = '1h-ago') {
  return '#' + mq.formatParams([['start', start], ['m', m]]);
}

function tagString(tags) {
  return Object.entries(tags).map(([k, v]) => `${k}=${v}`).join(',');
}

export class ExplorePage {
  constructor() {
    this.metrics = null;
    this.metric = null;
    this.loadedAt = 0;
    // When the list is truncated: metrics outside it that the server finds
    // for the filter (/api/suggest), and series counts of the ones opened.
    this.found = { q: '', names: [] };
    this.counts = new Map();
    this.searchTimer = 0;
    this.searchCtl = null;
    $('explore-filter').addEventListener('input', () => { this.renderMetrics(); this.search(); });
    // A click anywhere on a metric's row opens it, like its link.
    $('explore-metrics').addEventListener('click', (e) => {
      const tr = e.target.closest('tr[data-metric]');
      if (tr && !e.target.closest('a')) tr.querySelector('a').click();
    });
  }

  show(pairs) {
    const metric = mq.get(pairs, 'metric') || null;
    // The list again when older than 10 s (new series come in).
    if (!this.metrics || Date.now() - this.loadedAt > 10000) this.loadMetrics();
    this.loadMetric(metric);
  }

  hide() {}

  error(e) { showError($('explore-error'), e); }

  async loadMetrics() {
    this.loadedAt = Date.now();
    const summary = $('explore-summary');
    if (!this.metrics) summary.textContent = 'Loading metrics…';
    try {
      const c = await getJSON(url('/api/stats/cardinality', [['top', '10'], ['limit', '1000']]));
      this.metrics = c;
      summary.textContent = `${fmtInt(c.totalSeries)} series in ${fmtInt(c.metricCount)} metrics`;
      const tr = $('explore-truncated');
      tr.hidden = !c.truncated;
      tr.textContent = `Only the ${fmtInt(c.metrics.length)} metrics with the most series are listed; ` +
        'the filter also finds the others whose names start with what you type.';
      this.renderMetrics();
      this.search();
      if (!this.metric) this.renderTags(c.tagKeys, null);
      this.error(null);
    } catch (e) {
      summary.textContent = '';
      this.error(e);
    }
  }

  // The list is truncated: asks the server for metric names starting with
  // the filter's text (debounced), shown under the listed ones.
  search() {
    clearTimeout(this.searchTimer);
    if (this.searchCtl) this.searchCtl.abort();
    this.searchCtl = null;
    const q = $('explore-filter').value.trim();
    if (!this.metrics || !this.metrics.truncated || !q) {
      if (this.found.names.length) { this.found = { q: '', names: [] }; this.renderMetrics(); }
      return;
    }
    this.searchTimer = setTimeout(async () => {
      const ctl = this.searchCtl = new AbortController();
      try {
        const names = await getJSON(url('/api/suggest', [['type', 'metrics'], ['q', q], ['max', '100']]), { signal: ctl.signal });
        if (ctl !== this.searchCtl) return;
        this.found = { q, names: Array.isArray(names) ? names : [] };
        this.renderMetrics();
      } catch (e) {
        if (e.name !== 'AbortError') this.error(e);
      }
    }, 150);
  }

  renderMetrics() {
    const c = this.metrics;
    if (!c) return;
    const raw = $('explore-filter').value.trim();
    const f = raw.toLowerCase();
    const max = Math.max(1, ...c.metrics.map(m => m.series));
    const listed = new Set(c.metrics.map(m => m.name));
    const shown = c.metrics.filter(m => !f || m.name.toLowerCase().includes(f));
    // Found by the server outside the list (for this filter), and the one
    // open if it is outside the list: their counts once known.
    const extra = (this.found.q === raw ? this.found.names : []).filter(n => !listed.has(n));
    if (this.metric && !listed.has(this.metric) && !extra.includes(this.metric) &&
        (!f || this.metric.toLowerCase().includes(f))) extra.unshift(this.metric);
    const rows = shown.concat(extra.map(name => ({ name, series: this.counts.get(name), extra: true }))).map(m => {
      const bar = el('span', { className: 'bar' });
      if (m.series != null) bar.style.width = (100 * Math.min(1, m.series / max)).toFixed(1) + '%';
      else bar.hidden = true;
      const tr = el('tr', { dataset: { metric: m.name }, className: m.extra ? 'extra' : undefined,
        title: m.extra ? 'Not among the metrics listed; found by name' : undefined }, [
        el('th', { scope: 'row' }, [el('a', {
          href: '#' + mq.formatParams([['page', 'explore'], ['metric', m.name]]),
          textContent: m.name,
        })]),
        el('td', { className: 'num series-count', textContent: m.series != null ? String(m.series) : '–',
          title: m.series != null ? undefined : 'Open it to count its series' }),
        el('td', { className: 'bar-cell', 'aria-hidden': 'true' }, [bar]),
      ]);
      if (m.name === this.metric) tr.setAttribute('aria-current', 'true');
      return tr;
    });
    if (!rows.length) {
      const text = !c.metrics.length ? 'No metrics yet: nothing has been written to this server.'
        : c.truncated && this.found.q !== raw ? 'No listed metric matches the filter; searching all names…'
          : 'No metric matches the filter.';
      rows.push(el('tr', { className: 'none' }, [el('td', { colSpan: 3, textContent: text })]));
    }
    $('explore-metrics').tBodies[0].replaceChildren(...rows);
  }

  // Tag keys with their top values; metric null: over all metrics.
  renderTags(keys, metric) {
    const tags = $('explore-tags').tBodies[0];
    const link = (m, text, title) => metric
      ? el('a', { href: chartLink(m), textContent: text, title })
      : el('span', { textContent: text });
    tags.replaceChildren(...(keys || []).map(k => el('tr', { dataset: { tagk: k.name } }, [
      el('th', { scope: 'row' }, [link(`sum:${metric}{${k.name}=*}`, k.name, `Chart ${metric} grouped by ${k.name}`)]),
      el('td', { className: 'num tag-values', textContent: fmtInt(k.values) }),
      el('td', { className: 'num', textContent: fmtInt(k.series) }),
      el('td', {}, [el('span', { className: 'chips' }, (k.topValues || []).map(v => {
        const c = link(`sum:${metric}{${k.name}=${v.name}}`, `${v.name} (${fmtInt(v.series)})`,
          `Chart ${metric}{${k.name}=${v.name}}`);
        c.classList.add('chip');
        return c;
      }))]),
    ])));
    if (!(keys || []).length) tags.replaceChildren(el('tr', {}, [el('td', { colSpan: 4, textContent: 'No tags.' })]));
  }

  async loadMetric(metric) {
    this.metric = metric;
    this.renderMetrics();
    const title = $('explore-title');
    const chart = $('explore-chart');
    const series = $('explore-series').tBodies[0];
    const note = $('explore-series-note');
    if (!metric) {
      title.textContent = 'All metrics';
      chart.hidden = true;
      series.replaceChildren();
      note.textContent = 'Choose a metric to list its series.';
      if (this.metrics) this.renderTags(this.metrics.tagKeys, null);
      return;
    }
    title.textContent = metric;
    chart.hidden = false;
    chart.href = chartLink(`sum:${metric}`);
    chart.textContent = `Chart ${metric} (sum over the last hour)`;
    note.textContent = 'Loading…';
    try {
      const [card, look] = await Promise.all([
        getJSON(url('/api/stats/cardinality', [['metric', metric], ['top', '10']])),
        getJSON(url('/api/search/lookup', [['m', metric], ['limit', String(SERIES_SHOWN)]])),
      ]);
      if (this.metric !== metric) return;
      const m = (card.metrics || []).find(x => x.name === metric);
      if (m) { this.counts.set(metric, m.series); this.renderMetrics(); }
      this.renderTags(card.tagKeys, metric);
      const results = look.results || [];
      const total = look.totalResults ?? results.length;
      note.textContent = results.length < total
        ? `The first ${fmtInt(results.length)} of ${fmtInt(total)} series.`
        : `${fmtInt(total)} series.`;
      series.replaceChildren(...results.map(r => {
        const ts = tagString(r.tags || {});
        return el('tr', { dataset: { tsuid: r.tsuid || '' } }, [
          el('td', { className: 'mono', textContent: ts ? `{${ts}}` : '(no tags)' }),
          el('td', { className: 'mono dim', textContent: r.tsuid || '' }),
          el('td', {}, [el('a', {
            href: chartLink(ts ? `sum:${metric}{${ts}}` : `sum:${metric}`),
            textContent: 'Chart',
            'aria-label': `Chart ${metric}{${ts}}`,
          })]),
        ]);
      }));
      this.error(null);
    } catch (e) {
      if (this.metric !== metric) return;
      note.textContent = '';
      this.error(e);
    }
  }
}
