// Small DOM and formatting helpers shared by the pages.

// el('td', {className: 'x', textContent: 'y'}, [children]): properties are
// set as properties (never as a style attribute: the CSP forbids those).
export function el(tag, props, children) {
  const e = document.createElement(tag);
  if (props) for (const [k, v] of Object.entries(props)) {
    if (v === undefined) continue;
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('aria-') || k === 'role' || k === 'scope') e.setAttribute(k, v);
    else e[k] = v;
  }
  if (children) e.append(...children.filter(c => c != null));
  return e;
}

let ids = 0;
export const uid = () => 'u' + (++ids);

const pad = (n, w = 2) => String(n).padStart(w, '0');

// Local time, "2024-01-02 03:04:05" (with .mmm when not on a second).
export function fmtTime(ms) {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return String(ms);
  let s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (ms % 1000) s += '.' + pad(d.getMilliseconds(), 3);
  return s;
}

// The browser's offset from UTC at ms (now by default): "UTC+01:00".
export function tzLabel(ms = Date.now()) {
  const off = -new Date(ms).getTimezoneOffset();
  const a = Math.abs(off);
  return `UTC${off < 0 ? '-' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

export function fmtInt(n) {
  const v = Number(n);
  return Number.isFinite(v) ? v.toLocaleString('en-US') : String(n);
}

export function fmtBytes(n) {
  let v = Number(n);
  if (!Number.isFinite(v)) return String(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) : String(v)) + ' ' + units[i];
}

export function fmtDuration(secs) {
  let s = Math.max(0, Math.floor(Number(secs)));
  if (!Number.isFinite(s)) return String(secs);
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  return [d && d + 'd', (d || h) && h + 'h', (d || h || m) && m + 'm', s + 's'].filter(Boolean).join(' ');
}

export function fmtMs(ms) {
  const v = Number(ms);
  if (!Number.isFinite(v)) return '–';
  return v < 1000 ? Math.round(v) + ' ms' : v < 60000 ? (v / 1000).toFixed(2) + ' s' : fmtDuration(v / 1000);
}

// A tablist of role=tab buttons (aria-controls -> the tabpanel): click or
// arrow keys/Home/End select (roving tabindex); onSelect(id) after.
export function tabs(list, onSelect) {
  const all = () => [...list.querySelectorAll('[role=tab]')];
  function select(id, { focus = false, notify = true } = {}) {
    for (const t of all()) {
      const on = t.id === id;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
      if (on && focus) t.focus();
    }
    if (notify) onSelect(id);
  }
  list.addEventListener('click', (e) => {
    const t = e.target.closest('[role=tab]');
    if (t) select(t.id);
  });
  list.addEventListener('keydown', (e) => {
    const ts = all();
    const i = ts.indexOf(document.activeElement);
    if (i < 0) return;
    let j = null;
    if (e.key === 'ArrowRight') j = (i + 1) % ts.length;
    else if (e.key === 'ArrowLeft') j = (i - 1 + ts.length) % ts.length;
    else if (e.key === 'Home') j = 0;
    else if (e.key === 'End') j = ts.length - 1;
    if (j === null) return;
    e.preventDefault();
    select(ts[j].id, { focus: true });
  });
  return { select };
}

// Rows of a key/value table body.
export function kvRows(tbody, rows) {
  tbody.replaceChildren(...rows.map(([k, v, title]) => el('tr', { dataset: { key: k } }, [
    el('th', { scope: 'row', textContent: k }),
    el('td', { textContent: v, title: title || undefined }),
  ])));
}
