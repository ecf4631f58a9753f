// OpenTSDB's `m` query strings and the page's URL parameters.
//
// m := <agg>:[<interval>-<fn>[-<fill>]:][rate[{counter[,<max>[,<reset>]]}]:]<metric>[{filters}][{filters}]
// The first braces hold group-by filters, the second non-grouping ones.
// parseM returns a form model only when buildM gives the same string back;
// anything else is kept whole as { raw }.

// Splits s at `sep` outside (), {} and [].
function splitTop(s, sep) {
  const out = [];
  let depth = 0, start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '(' || c === '{' || c === '[') depth++;
    else if (c === ')' || c === '}' || c === ']') depth = Math.max(0, depth - 1);
    else if (c === sep && depth === 0) { out.push(s.slice(start, i)); start = i + 1; }
  }
  out.push(s.slice(start));
  return out;
}

// "k=v,k2=v2" -> [{key, value}]; null when malformed.
function parseFilters(body) {
  if (body.trim() === '') return [];
  const out = [];
  for (const part of splitTop(body, ',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    out.push({ key: part.slice(0, eq), value: part.slice(eq + 1) });
  }
  return out;
}

// The brace groups after the metric name: "{a}{b}" -> ["a", "b"]; null if
// anything else follows.
function braceGroups(s) {
  const groups = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] !== '{') return null;
    let depth = 0, paren = 0, j = i;
    for (; j < s.length; j++) {
      const c = s[j];
      if (c === '(') paren++;
      else if (c === ')') paren = Math.max(0, paren - 1);
      else if (paren === 0 && c === '{') depth++;
      else if (paren === 0 && c === '}' && --depth === 0) break;
    }
    if (j >= s.length) return null;
    groups.push(s.slice(i + 1, j));
    i = j + 1;
  }
  return groups;
}

export function emptyQuery() {
  return {
    aggregator: 'sum', metric: '', filters: [],
    downsample: { interval: '', fn: 'avg', fill: '' },
    rate: false, counter: false, counterMax: '', resetValue: '',
    raw: null,
  };
}

export function parseM(m) {
  const q = parseLoose(m);
  if (q && buildM(q) === m) return q;
  return Object.assign(emptyQuery(), { raw: m });
}

function parseLoose(m) {
  const parts = splitTop(m, ':');
  if (parts.length < 2 || parts.length > 4) return null;
  const q = emptyQuery();
  q.aggregator = parts[0];
  if (!/^[A-Za-z0-9_]+$/.test(q.aggregator)) return null;
  const last = parts[parts.length - 1];
  const brace = last.indexOf('{');
  q.metric = brace < 0 ? last : last.slice(0, brace);
  if (!q.metric || /[\s{}():,=]/.test(q.metric)) return null;
  if (brace >= 0) {
    const groups = braceGroups(last.slice(brace));
    if (!groups || groups.length > 2) return null;
    const g = parseFilters(groups[0]);
    const ng = groups.length > 1 ? parseFilters(groups[1]) : [];
    if (!g || !ng) return null;
    q.filters = g.map(f => ({ ...f, groupBy: true }))
      .concat(ng.map(f => ({ ...f, groupBy: false })));
    q._braces = groups.length; // "{}" kept when written so
  }
  for (const p of parts.slice(1, -1)) {
    let r;
    if ((r = /^rate(?:\{(.*)\})?$/.exec(p))) {
      if (q.rate) return null;
      q.rate = true;
      if (r[1] !== undefined) {
        const o = r[1].split(',');
        if (o[0] !== 'counter' || o.length > 3) return null;
        q.counter = true;
        q.counterMax = o[1] || '';
        q.resetValue = o[2] || '';
      }
    } else if ((r = /^([0-9]+[A-Za-z]+|0all)-([A-Za-z0-9_]+)(?:-(none|nan|null|zero))?$/.exec(p))) {
      if (q.downsample.interval || q.rate) return null; // order: downsample, then rate
      q.downsample = { interval: r[1], fn: r[2], fill: r[3] || '' };
    } else {
      return null;
    }
  }
  return q;
}

export function buildM(q) {
  if (q.raw != null) return q.raw;
  let m = q.aggregator + ':';
  const ds = q.downsample;
  if (ds && ds.interval) m += `${ds.interval}-${ds.fn}${ds.fill ? '-' + ds.fill : ''}:`;
  if (q.rate) {
    m += 'rate';
    if (q.counter) {
      const opts = ['counter'];
      if (q.counterMax || q.resetValue) opts.push(q.counterMax);
      if (q.resetValue) opts.push(q.resetValue);
      m += '{' + opts.join(',') + '}';
    }
    m += ':';
  }
  m += q.metric;
  const fs = (q.filters || []).filter(f => f.key && f.value);
  const g = fs.filter(f => f.groupBy).map(f => `${f.key}=${f.value}`);
  const ng = fs.filter(f => !f.groupBy).map(f => `${f.key}=${f.value}`);
  if (ng.length || q._braces === 2) m += `{${g.join(',')}}{${ng.join(',')}}`;
  else if (g.length) m += `{${g.join(',')}}`;
  else if (q._braces) m += '{}'.repeat(q._braces);
  return m;
}

// What comes before the metric: "sum:1m-avg:rate:" of "sum:1m-avg:rate:x{a=b}".
export function mPrefix(m) {
  const parts = splitTop(m, ':');
  return parts.length > 1 ? parts.slice(0, -1).join(':') + ':' : '';
}

// ---- URL parameters: an ordered list of [key, value] pairs ----

// Minimal escaping so links stay readable: {}*:,|=/ kept.
function enc(v) {
  return encodeURIComponent(v).replace(/%(3A|2C|7B|7D|2A|2F|3D|7C|40|5B|5D)/g,
    (_, h) => String.fromCharCode(parseInt(h, 16)));
}

function dec(v, plusIsSpace) {
  if (plusIsSpace) v = v.replace(/\+/g, ' ');
  try { return decodeURIComponent(v); } catch { return v; }
}

export function parseParams(s, plusIsSpace = false) {
  s = s.replace(/^[#?]/, '');
  const out = [];
  if (!s) return out;
  for (const part of s.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    if (eq < 0) out.push([dec(part, plusIsSpace), '']);
    else out.push([dec(part.slice(0, eq), plusIsSpace), dec(part.slice(eq + 1), plusIsSpace)]);
  }
  return out;
}

export function formatParams(pairs) {
  return pairs.map(([k, v]) => enc(k) + '=' + enc(v)).join('&');
}

export function get(pairs, key) {
  const p = pairs.find(([k]) => k === key);
  return p ? p[1] : undefined;
}

export function getAll(pairs, key) {
  return pairs.filter(([k]) => k === key).map(([, v]) => v);
}

// Replaces every `key` in pairs by the given values, at the place of the
// first one (or the end), keeping the order of the other keys.
export function setAll(pairs, key, values) {
  const idx = pairs.findIndex(([k]) => k === key);
  const rest = pairs.filter(([k]) => k !== key);
  const add = values.filter(v => v != null && v !== '').map(v => [key, v]);
  if (idx < 0) return rest.concat(add);
  const before = pairs.slice(0, idx).filter(([k]) => k !== key).length;
  return rest.slice(0, before).concat(add, rest.slice(before));
}

// Names a series of an /api/query answer: metric{k=v,...}.
export function seriesName(s) {
  const tags = Object.entries(s.tags || {}).map(([k, v]) => `${k}=${v}`).join(',');
  return tags ? `${s.metric}{${tags}}` : s.metric;
}
