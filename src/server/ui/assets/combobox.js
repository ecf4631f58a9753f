// An accessible combobox (WAI-ARIA 1.2, list autocomplete): the input has
// role=combobox and controls a listbox of role=option items, filled from
// an async source as one types (debounced). The list opens on typing or
// ArrowDown, not on focus. ArrowDown/ArrowUp move, Enter or a click
// chooses, Escape closes.

let seq = 0;

// source(term, signal) -> Promise<string[]>.
// opts.term(value) -> the part of the value to complete (default: all of it)
// opts.apply(value, choice) -> the new value (default: choice)
export function combobox(input, source, opts = {}) {
  const id = 'cb' + (++seq);
  const wrap = document.createElement('div');
  wrap.className = 'combo';
  input.replaceWith(wrap);
  wrap.append(input);
  const list = document.createElement('ul');
  list.id = id + '-list';
  list.className = 'listbox';
  list.setAttribute('role', 'listbox');
  list.setAttribute('aria-label', opts.listLabel || 'Suggestions');
  list.hidden = true;
  wrap.append(list);

  input.setAttribute('role', 'combobox');
  input.setAttribute('aria-autocomplete', 'list');
  input.setAttribute('aria-expanded', 'false');
  input.setAttribute('aria-controls', list.id);
  input.autocomplete = 'off';
  input.spellcheck = false;

  const termOf = opts.term || (v => v);
  const apply = opts.apply || ((_, c) => c);
  let items = [];
  let active = -1;
  let timer = 0;
  let ctl = null;
  let reqNo = 0;
  let wanted = false; // the user asked for the list (typed, ArrowDown)

  function open() {
    if (!items.length || !wanted) return close();
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
  }
  function close() {
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    input.removeAttribute('aria-activedescendant');
    active = -1;
  }
  function setActive(i) {
    const opts = list.children;
    if (active >= 0 && opts[active]) opts[active].setAttribute('aria-selected', 'false');
    active = i;
    if (i >= 0 && opts[i]) {
      opts[i].setAttribute('aria-selected', 'true');
      input.setAttribute('aria-activedescendant', opts[i].id);
      opts[i].scrollIntoView({ block: 'nearest' });
    } else {
      input.removeAttribute('aria-activedescendant');
    }
  }
  // New options; the highlighted one stays highlighted if still listed.
  function render(names) {
    const was = active >= 0 ? items[active] : undefined;
    items = names;
    const frag = document.createDocumentFragment();
    names.forEach((n, i) => {
      const li = document.createElement('li');
      li.id = `${id}-o${i}`;
      li.setAttribute('role', 'option');
      li.setAttribute('aria-selected', 'false');
      li.textContent = n;
      frag.append(li);
    });
    list.replaceChildren(frag);
    active = -1;
    if (document.activeElement === input) open(); else close();
    const keep = was === undefined ? -1 : names.indexOf(was);
    if (keep >= 0 && !list.hidden) setActive(keep);
  }
  // Forgets the suggestion pending or on its way: nothing opens the list
  // after a choice or a close.
  function cancel() {
    clearTimeout(timer);
    reqNo++;
    if (ctl) ctl.abort();
    ctl = null;
  }
  function dismiss() {
    wanted = false;
    cancel();
    close();
  }
  function choose(i) {
    if (i < 0 || i >= items.length) return;
    const choice = items[i];
    input.value = apply(input.value, choice);
    dismiss();
    input.dispatchEvent(new Event('change', { bubbles: true }));
    if (opts.onChoose) opts.onChoose(choice);
  }
  async function suggest() {
    const no = ++reqNo;
    if (ctl) ctl.abort();
    ctl = new AbortController();
    const term = termOf(input.value);
    try {
      const names = await source(term, ctl.signal);
      // Only the answer for what the input holds now.
      if (no === reqNo && termOf(input.value) === term) render(names || []);
    } catch (e) {
      if (e.name !== 'AbortError' && no === reqNo) render([]);
    }
  }
  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(suggest, ms);
  }

  input.addEventListener('input', () => {
    wanted = true;
    // Narrow what is shown at once; the server's answer follows.
    const term = termOf(input.value);
    if (items.length) render(items.filter(n => n.startsWith(term)));
    schedule(120);
  });
  input.addEventListener('blur', () => { wanted = false; cancel(); setTimeout(close, 120); });
  input.addEventListener('keydown', (e) => {
    const shown = !list.hidden;
    switch (e.key) {
      case 'ArrowDown':
        e.preventDefault();
        wanted = true;
        if (!shown) { if (items.length) { open(); setActive(0); } else schedule(0); }
        else setActive(Math.min(items.length - 1, active + 1));
        break;
      case 'ArrowUp':
        if (!shown) return;
        e.preventDefault();
        setActive(Math.max(0, active - 1));
        break;
      case 'Enter':
        if (shown && active >= 0) { e.preventDefault(); choose(active); }
        else dismiss();
        break;
      case 'Escape':
        if (shown) { e.preventDefault(); e.stopPropagation(); }
        dismiss();
        break;
      case 'Tab':
        dismiss();
        break;
    }
  });
  // mousedown keeps the focus in the input.
  list.addEventListener('mousedown', (e) => e.preventDefault());
  list.addEventListener('click', (e) => {
    const li = e.target.closest('[role=option]');
    if (li) choose([...list.children].indexOf(li));
  });
  return { close: dismiss, refresh: () => { wanted = true; schedule(0); } };
}

// A source that asks /api/suggest, with a small cache per (type, term).
export function suggestSource(getJSON, type, max = 25) {
  const cache = new Map();
  return async (term, signal) => {
    const key = type + '\0' + term;
    if (cache.has(key)) return cache.get(key);
    const names = await getJSON(`/api/suggest?type=${type}&max=${max}&q=${encodeURIComponent(term)}`, { signal });
    if (cache.size > 200) cache.clear();
    cache.set(key, names);
    setTimeout(() => cache.delete(key), 30000);
    return names;
  };
}
