// The router: pages by the URL fragment, which holds OpenTSDB GUI keys
// (start, end, m, autoreload, ...) plus ours (page, view, metric). A link
// with a query string (/?start=..&m=..) is moved into the fragment.

import * as mq from './mquery.js';
import { QueryPage } from './query.js';
import { token, setToken, tokenDeclined, enterToken } from './api.js';

const PAGES = ['query', 'explore', 'status'];
const modules = {}; // page name -> page object (explore/status load on first use)
let current = null;

let routed = null; // the URL last shown: popstate and hashchange both fire

const query = new QueryPage(frag => {
  document.getElementById('nav-query').href = '#' + frag;
  routed = location.href;
});
modules.query = query;

async function pageObject(name) {
  if (modules[name]) return modules[name];
  if (name === 'explore') {
    const { ExplorePage } = await import('./explore.js');
    modules.explore = new ExplorePage();
  } else if (name === 'status') {
    const { StatusPage } = await import('./status.js');
    modules.status = new StatusPage();
  }
  return modules[name];
}

function currentPairs() {
  return mq.parseParams(location.hash);
}

async function route() {
  if (routed === location.href) return;
  routed = location.href;
  const pairs = currentPairs();
  let name = mq.get(pairs, 'page') || 'query';
  if (!PAGES.includes(name)) name = 'query';
  for (const p of PAGES) {
    document.getElementById('page-' + p).hidden = p !== name;
    const link = document.getElementById('nav-' + p);
    if (p === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.title = (name === 'query' ? 'Query' : name[0].toUpperCase() + name.slice(1)) + ' · hourglass';
  if (current && current !== name && modules[current]) modules[current].hide();
  current = name;
  const page = await pageObject(name);
  if (current === name) page.show(pairs);
}

// /?start=1h-ago&m=... (OpenTSDB's GUI as a query string) -> /#start=...
function adoptQueryString() {
  const search = mq.parseParams(location.search, true);
  if (!search.length) return;
  const pairs = search.concat(currentPairs());
  history.replaceState(null, '', '/#' + mq.formatParams(pairs));
}

function syncTokenButton() {
  document.getElementById('token-forget').hidden = !token();
  // After a Cancel in the token dialog: the way to open it again.
  document.getElementById('token-enter').hidden = !tokenDeclined() || !!token();
}

document.getElementById('token-forget').addEventListener('click', () => {
  setToken('');
  syncTokenButton();
});
document.getElementById('token-enter').addEventListener('click', () => {
  enterToken().then(() => {
    // Shown again with the token: the page asks the server once more.
    routed = null;
    route();
  }, () => { /* cancelled again */ });
});
document.addEventListener('hourglass-token', syncTokenButton);
window.addEventListener('hashchange', route);
window.addEventListener('popstate', route);

adoptQueryString();
syncTokenButton();
route();
