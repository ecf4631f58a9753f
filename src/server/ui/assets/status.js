// The status page: version and uptime, ingest rates per protocol (two
// polls of /metrics), queries running and recent, storage, limits and the
// configuration. Refreshes every 5 s while it is shown.

import { getJSON, getText, showError } from './api.js';
import { el, fmtBytes, fmtDuration, fmtInt, fmtMs, fmtTime, kvRows } from './util.js';

// Today's times without the date.
const when = (ms) => {
  const t = fmtTime(ms);
  return t.slice(0, 10) === fmtTime(Date.now()).slice(0, 10) ? t.slice(11) : t;
};

const $ = (id) => document.getElementById(id);
const PERIOD = 5000;
const LIMIT_PREFIXES = ['hourglass.query.', 'hourglass.head.max_', 'hourglass.server.max_',
  'hourglass.uid.', 'hourglass.retention.'];
const SECRET = /pass(word)?|secret|token|credential|private/i;
const MASK = '********';

// Prometheus text -> [{name, labels: {}, value}]
function parseProm(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[2]) for (const l of m[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

function bytesRow(k, v) {
  return [k, v == null ? '–' : fmtBytes(v), v == null ? '' : fmtInt(v) + ' bytes'];
}

export class StatusPage {
  // One polling chain: at most one timer (this.timer) and one refresh in
  // flight (this.busy); a refresh schedules the next one when it ends.
  constructor() {
    this.timer = 0;
    this.busy = false;
    this.active = false;
    this.prevIngest = null;
    this.epoch = 0; // bumped after an absence: rates start from fresh polls
    this.config = null;
    this.errors = new Map();
    $('status-config-filter').addEventListener('input', () => this.renderConfig());
    $('status-pause').addEventListener('change', () => {
      if ($('status-pause').checked) this.stop();
      else this.resume();
    });
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'hidden') this.stop();
      else this.resume();
    });
  }

  show() {
    this.active = true;
    this.config = null; // read again on each visit
    this.resume();
  }

  hide() {
    this.active = false;
    this.stop();
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = 0;
  }

  // After a pause, a hidden tab or another page: poll now, and compute the
  // next rate from two new polls, not over the absence.
  resume() {
    this.epoch++;
    this.prevIngest = null;
    this.schedule(0);
  }

  schedule(ms) {
    this.stop();
    if (!this.active || document.visibilityState === 'hidden' || $('status-pause').checked) return;
    if (this.busy) return; // the refresh running schedules the next when it ends
    this.timer = setTimeout(() => { this.timer = 0; this.refresh(); }, ms);
  }

  async part(name, fn) {
    try {
      await fn();
      this.errors.delete(name);
    } catch (e) {
      this.errors.set(name, e);
    }
  }

  async refresh() {
    if (this.busy) return;
    this.busy = true;
    const epoch = this.epoch;
    const first = !this.prevIngest;
    try {
      await this.poll(epoch);
    } finally {
      this.busy = false;
    }
    // The first rate needs a second poll: soon after the first /metrics
    // that answered. While /metrics fails, every PERIOD, not faster.
    // Resumed while this ran: poll again now.
    if (epoch !== this.epoch) this.schedule(0);
    else this.schedule(first && this.prevIngest ? 1000 : PERIOD);
  }

  async poll(epoch) {
    await Promise.all([
      this.version ? null : this.part('version', async () => {
        const v = await getJSON('/api/version');
        this.version = v;
        $('status-version').textContent = [v.version, v.short_revision && `(${v.short_revision})`,
          v.compatibility && `· ${v.compatibility}`].filter(Boolean).join(' ');
      }),
      this.config ? null : this.part('config', async () => {
        this.config = await getJSON('/api/config');
        this.renderConfig();
      }),
      this.part('stats', async () => this.renderStats(await getJSON('/api/stats'))),
      this.part('queries', async () => this.renderQueries(await getJSON('/api/stats/query'))),
      this.part('metrics', async () => this.renderIngest(parseProm(await getText('/metrics')), epoch)),
    ]);
    // Each message once (one 401 fails every part alike).
    const errs = [...new Map([...this.errors.values()].map(e => [e.message, e])).values()];
    if (errs.length) {
      showError($('status-error'), { status: errs[0].status, message: errs[0].message,
        details: [errs[0].details, ...errs.slice(1).map(e => e.message)].filter(Boolean).join('\n') });
    } else showError($('status-error'), null);
    $('status-updated').textContent = `Updated ${fmtTime(Date.now())}; refreshes every 5 s.`;
  }

  renderStats(list) {
    const s = {};
    for (const e of list) {
      const t = e.tags || {};
      const key = e.metric.replace(/^tsd\./, '') + (t.type ? '.' + t.type : '') + (t.kind ? '.' + t.kind : '');
      s[key] = Number(e.value);
    }
    this.stats = s;
    $('status-uptime').textContent = s.uptime != null ? fmtDuration(s.uptime) : '–';
    $('status-series').textContent = s.series != null ? fmtInt(s.series) : '–';
    $('status-added').textContent = s['datapoints.added'] != null ? fmtInt(s['datapoints.added']) : '–';
    this.renderStorage();
  }

  renderStorage() {
    const s = this.stats || {};
    const dataBytes = s['storage.bytes.data'];
    const points = s['storage.points'];
    const rows = [
      ['Table files (data)', fmtInt(s['storage.files.data'] ?? '–')],
      ['Table files (UID)', fmtInt(s['storage.files.meta'] ?? '–')],
      bytesRow('Data bytes', dataBytes),
      bytesRow('UID table bytes', s['storage.bytes.meta']),
      ['Points in table files', fmtInt(points ?? '–')],
      ['Bytes per point', points > 0 ? (dataBytes / points).toFixed(2) : '–'],
      ['Head points', fmtInt(s['head.points'] ?? '–')],
      bytesRow('Head memory', s['head.bytes']),
      ['Head hours open', fmtInt(s['head.hours'] ?? '–')],
      bytesRow('WAL', s['wal.bytes']),
      bytesRow('Block cache', s['block_cache.bytes']),
      ['Flushes', fmtInt(s.flushes ?? '–')],
      ['Compactions', fmtInt(s['storage.compactions'] ?? '–')],
    ];
    for (const [k, v] of Object.entries(s)) {
      if (k.startsWith('uid.ids-used.')) rows.push([`UIDs used (${k.slice(13)})`, fmtInt(v)]);
    }
    const c = this.config || {};
    if (c['hourglass.rollup.enabled'] === 'true' && c['hourglass.rollup.tiers']) {
      const tiers = [...c['hourglass.rollup.tiers'].matchAll(/"interval":"([^"]+)"(?:,"ttl":"([^"]*)")?/g)]
        .map(m => m[1] + (m[2] && m[2] !== '0' ? ` (kept ${m[2]})` : ''));
      rows.push(['Rollup tiers', tiers.join(', ') || c['hourglass.rollup.tiers']]);
      if (this.rollupHours != null) rows.push(['Rollup hours written', fmtInt(this.rollupHours)]);
    }
    kvRows($('status-storage').tBodies[0], rows);
  }

  // epoch: of the poll these samples are from; one from before an absence
  // neither gives a rate nor is the base of the next.
  renderIngest(samples, epoch) {
    const now = performance.now();
    const cur = new Map();
    for (const x of samples) {
      if (x.name === 'hourglass_points_received_total') cur.set(x.labels.protocol || '?', x.value);
      if (x.name === 'hourglass_rollup_hours_total') this.rollupHours = x.value;
    }
    if (!cur.size) {
      for (const x of samples) if (x.name === 'hourglass_points_written_total') cur.set('all', x.value);
    }
    const prev = epoch === this.epoch ? this.prevIngest : null;
    if (epoch === this.epoch) this.prevIngest = { at: now, values: cur };
    let totalRate = 0, total = 0;
    const rows = [...cur.entries()].sort((a, b) => b[1] - a[1]).map(([proto, v]) => {
      let rate = null;
      if (prev && prev.values.has(proto) && now > prev.at) {
        rate = Math.max(0, (v - prev.values.get(proto)) / ((now - prev.at) / 1000));
        totalRate += rate;
      }
      total += v;
      return el('tr', { dataset: { protocol: proto } }, [
        el('th', { scope: 'row', textContent: proto }),
        el('td', { className: 'num rate', textContent: rate == null ? '…' : fmtInt(Math.round(rate)) }),
        el('td', { className: 'num', textContent: fmtInt(v) }),
      ]);
    });
    if (rows.length > 1) rows.push(el('tr', { className: 'total' }, [
      el('th', { scope: 'row', textContent: 'all' }),
      el('td', { className: 'num', textContent: prev ? fmtInt(Math.round(totalRate)) : '…' }),
      el('td', { className: 'num', textContent: fmtInt(total) }),
    ]));
    if (!rows.length) rows.push(el('tr', {}, [el('td', { colSpan: 3, textContent: 'Nothing received yet.' })]));
    $('status-ingest').tBodies[0].replaceChildren(...rows);
    this.renderStorage();
  }

  renderQueries(q) {
    $('status-queue').textContent = `${fmtInt(q.running.length)} running, ${fmtInt(q.queued)} queued, ` +
      `${fmtBytes(q.memoryBytes)} of query memory in use.`;
    const cell = (text, cls) => el('td', { className: cls || '', textContent: text });
    const queryCell = (r) => {
      let text = String(r.query ?? '');
      try { text = decodeURIComponent(text); } catch { /* shown as sent */ }
      return el('td', { className: 'mono query-text', textContent: text, title: text });
    };
    const running = [...q.running].sort((a, b) => b.elapsedMs - a.elapsedMs).map(r =>
      el('tr', { dataset: { queryId: String(r.queryId) } }, [
        queryCell(r), cell(fmtMs(r.elapsedMs), 'num'), cell(fmtInt(r.stats?.points ?? 0), 'num'),
        cell(r.remote || ''), cell(when(r.queryStartTimestamp)),
      ]));
    if (!running.length) running.push(el('tr', { className: 'none' }, [el('td', { colSpan: 5, textContent: 'No query is running.' })]));
    $('status-running').tBodies[0].replaceChildren(...running);
    const recent = [...q.completed].sort((a, b) => b.elapsedMs - a.elapsedMs).slice(0, 50).map(r => {
      const code = r.httpResponse?.code;
      return el('tr', { dataset: { queryId: String(r.queryId) }, className: code >= 400 ? 'failed' : '' }, [
        queryCell(r), cell(fmtMs(r.elapsedMs), 'num'), cell(fmtInt(r.stats?.points ?? 0), 'num'),
        el('td', { textContent: String(code ?? ''), title: r.exception || '' }),
        cell(r.remote || ''), cell(when(r.queryStartTimestamp)),
      ]);
    });
    if (!recent.length) recent.push(el('tr', { className: 'none' }, [el('td', { colSpan: 6, textContent: 'No query yet.' })]));
    $('status-recent').tBodies[0].replaceChildren(...recent);
  }

  renderConfig() {
    const c = this.config;
    if (!c) return;
    const shown = Object.entries(c).map(([k, v]) => [k, SECRET.test(k) && v !== '' ? MASK : String(v)]);
    const f = $('status-config-filter').value.trim().toLowerCase();
    kvRows($('status-config').tBodies[0], shown.filter(([k, v]) => !f || k.toLowerCase().includes(f) || v.toLowerCase().includes(f)));
    const limits = shown.filter(([k]) => LIMIT_PREFIXES.some(p => k.startsWith(p))).map(([k, v]) => {
      const name = k.replace(/^hourglass\./, '');
      if (/bytes$/.test(k) && /^\d+$/.test(v) && v !== '0') return [name, fmtBytes(v), v + ' bytes'];
      return [name, v];
    });
    kvRows($('status-limits').tBodies[0], limits);
    this.renderStorage();
  }
}
